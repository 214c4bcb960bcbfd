/// ATT error codes (Core Spec Vol 3 Part F §3.4.1.1, and Common Profile and
/// Service Error Codes in the Core Specification Supplement Part B).
public enum ATTError: UInt8, Error, Sendable, CaseIterable, CustomStringConvertible {
    case invalidHandle = 0x01
    case readNotPermitted = 0x02
    case writeNotPermitted = 0x03
    case invalidPDU = 0x04
    case insufficientAuthentication = 0x05
    case requestNotSupported = 0x06
    case invalidOffset = 0x07
    case insufficientAuthorization = 0x08
    case prepareQueueFull = 0x09
    case attributeNotFound = 0x0A
    case attributeNotLong = 0x0B
    case encryptionKeySizeTooShort = 0x0C
    case invalidAttributeValueLength = 0x0D
    case unlikelyError = 0x0E
    case insufficientEncryption = 0x0F
    case unsupportedGroupType = 0x10
    case insufficientResources = 0x11
    case databaseOutOfSync = 0x12
    case valueNotAllowed = 0x13
    // Common Profile and Service Error Codes (CSS Part B).
    case writeRequestRejected = 0xFC
    case cccdImproperlyConfigured = 0xFD
    case procedureAlreadyInProgress = 0xFE
    case outOfRange = 0xFF

    /// snake_case name, as used in the control protocol ("invalid_handle").
    public var name: String {
        switch self {
        case .invalidHandle: "invalid_handle"
        case .readNotPermitted: "read_not_permitted"
        case .writeNotPermitted: "write_not_permitted"
        case .invalidPDU: "invalid_pdu"
        case .insufficientAuthentication: "insufficient_authentication"
        case .requestNotSupported: "request_not_supported"
        case .invalidOffset: "invalid_offset"
        case .insufficientAuthorization: "insufficient_authorization"
        case .prepareQueueFull: "prepare_queue_full"
        case .attributeNotFound: "attribute_not_found"
        case .attributeNotLong: "attribute_not_long"
        case .encryptionKeySizeTooShort: "encryption_key_size_too_short"
        case .invalidAttributeValueLength: "invalid_attribute_value_length"
        case .unlikelyError: "unlikely_error"
        case .insufficientEncryption: "insufficient_encryption"
        case .unsupportedGroupType: "unsupported_group_type"
        case .insufficientResources: "insufficient_resources"
        case .databaseOutOfSync: "database_out_of_sync"
        case .valueNotAllowed: "value_not_allowed"
        case .writeRequestRejected: "write_request_rejected"
        case .cccdImproperlyConfigured: "cccd_improperly_configured"
        case .procedureAlreadyInProgress: "procedure_already_in_progress"
        case .outOfRange: "out_of_range"
        }
    }

    public init?(name: String) {
        guard let e = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = e
    }

    public var description: String { name }
}
