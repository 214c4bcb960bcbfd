import GattCore

/// What a control client asks for (one line of the protocol).
public enum ControlCommand: Sendable, Equatable {
    /// Set a value and notify/indicate subscribers (`central`: only that one).
    /// `wait`: when a subscriber's transmit queue is full, wait for room (the connection's later
    /// requests wait behind it) instead of answering `busy`.
    case notify(characteristic: String, value: ControlValue, central: String?, wait: Bool = false)
    /// `notify` naming several values (`"values":[{"characteristic":ID,"value":V},...]`): all
    /// set and sent at once, in one Multiple Handle Value Notification to a client that
    /// supports it (Vol 3 Part F §3.4.7.4), else one PDU per value. All or nothing.
    case notifyValues(values: [ControlNotifyValue], central: String?, wait: Bool = false)
    /// Set a value without notifying.
    case set(characteristic: String, value: ControlValue)
    case get(characteristic: String)
    case status
    /// Turn the connection into an event stream. Watching is passive; `requests: true` also
    /// makes this client a responder for `"handler": "control"` characteristics (`false`
    /// stops that; nil, the member left out, leaves it as it was).
    case watch(requests: Bool?)
    /// Answer a forwarded read/write request (a success without `"value"` is the empty value).
    case respond(request: UInt64, result: Result<ControlValue, ATTError>)
    /// Advertising on or off, for one set (`set` nil: the primary set, the config's `advertising`).
    case advertise(enable: Bool, set: String? = nil)
    /// Replace a set's manufacturer or service data while it runs (`set` nil: the primary set):
    /// `{"op":"advertising_data","set":ID,"manufacturer_data":[...],"service_data":[...]}`, each
    /// member as in the config; an absent one stays, an empty array removes the field.
    case advertisingData(set: String?, update: AdvertisingDataUpdate)
    case disconnect(central: String)
    /// Answer a pairing prompt (`central` nil: the only prompt waiting).
    case pairingRespond(central: String?, answer: ControlPairingAnswer)
    /// List the bonds.
    case bonds
    /// Forget a bond (and disconnect the central).
    case unbond(central: String)
    /// Add a service at runtime: `service` is a service object as in the config's `services`.
    case addService(service: JSONValue)
    /// Remove a service by its config id.
    case removeService(id: String)
    case listServices
    /// Start a btsnoop capture into a new file (nil: stop it): `{"op":"capture","file":PATH}`,
    /// `{"op":"capture","stop":true}`.
    case capture(file: String?)
    /// `l2cap_listen`: hand this client every channel centrals open to the app channel `channel`
    /// (an `l2cap_channel` event with the socket attached).
    case l2capListen(channel: String)
    case l2capUnlisten(channel: String)
    case listL2CAPChannels
    /// `publish_l2cap_channel`: a channel object as in the config's `l2cap_channels`.
    case publishL2CAPChannel(channel: JSONValue)
    case unpublishL2CAPChannel(id: String)
    /// New connection parameters for one central (`central`) or every connected one (nil).
    case connectionParameters(central: String?, ControlConnectionParameters)
    /// Preferred PHYs for one central (LE Set PHY): `tx` and `rx`, with the LE Coded coding.
    case phy(central: String, tx: LEPHY, rx: LEPHY, coding: LECodedPHYCoding)
    /// The largest LL Data PDU payload to send to one central (27...251 octets, LE Set Data Length).
    case dataLength(central: String, txOctets: Int)
    /// `signal`: passes `name` to every watching client as a `signal` event (programs on the
    /// socket telling each other something, e.g. `gattctl improv authorize` for a button).
    case signal(name: String)

    /// The `"op"` member.
    public var op: String {
        switch self {
        case .notify, .notifyValues: "notify"
        case .set: "set"
        case .get: "get"
        case .status: "status"
        case .watch: "watch"
        case .respond: "respond"
        case .advertise: "advertise"
        case .advertisingData: "advertising_data"
        case .disconnect: "disconnect"
        case .pairingRespond: "pairing_respond"
        case .bonds: "bonds"
        case .unbond: "unbond"
        case .addService: "add_service"
        case .removeService: "remove_service"
        case .listServices: "list_services"
        case .capture: "capture"
        case .l2capListen: "l2cap_listen"
        case .l2capUnlisten: "l2cap_unlisten"
        case .listL2CAPChannels: "list_l2cap_channels"
        case .publishL2CAPChannel: "publish_l2cap_channel"
        case .unpublishL2CAPChannel: "unpublish_l2cap_channel"
        case .connectionParameters: "connection_parameters"
        case .phy: "phy"
        case .dataLength: "data_length"
        case .signal: "signal"
        }
    }
}
