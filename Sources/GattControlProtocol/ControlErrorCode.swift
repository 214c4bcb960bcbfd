import GattCore

/// The error codes of the control protocol (`{"ok":false,"error":CODE,...}`).
public enum ControlErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case unknownOp = "unknown_op"
    case missingField = "missing_field"
    case unknownCharacteristic = "unknown_characteristic"
    case invalidValue = "invalid_value"
    case valueTooLong = "value_too_long"
    case notNotifiable = "not_notifiable"
    case busy
    case unknownRequest = "unknown_request"
    case unknownCentral = "unknown_central"
    /// `pairing_respond` with no pairing prompt waiting for that central, or the wrong kind of answer.
    case noPairingPrompt = "no_pairing_prompt"
    /// `unbond` of an address that has no bond.
    case unknownBond = "unknown_bond"
    /// `remove_service`: no service with that id (or it cannot be removed).
    case unknownService = "unknown_service"
    /// A persisted value could not be made durable; nothing was changed.
    case persistFailed = "persist_failed"
    /// Sent once to a client over `--max-control-clients`, which is then closed.
    case tooManyClients = "too_many_clients"
    /// An L2CAP channel op naming no channel gattd has (or, for `unpublish_l2cap_channel`, one
    /// a characteristic still publishes).
    case unknownChannel = "unknown_channel"
    /// A link request (`connection_parameters`) the central, the controller or the transport
    /// refused; the message says which and why.
    case refused
    /// A link request that got no answer in time (the link's parameters may still change).
    case timeout
}
