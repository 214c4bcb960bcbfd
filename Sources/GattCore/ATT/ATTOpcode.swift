/// ATT PDU opcodes (Core Spec Vol 3 Part F §3.3.1 and §3.4.8).
///
/// Bit 7 is the Authentication Signature Flag, bit 6 the Command Flag, bits
/// 5–0 the method.
public enum ATTOpcode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case errorResponse = 0x01
    case exchangeMTURequest = 0x02
    case exchangeMTUResponse = 0x03
    case findInformationRequest = 0x04
    case findInformationResponse = 0x05
    case findByTypeValueRequest = 0x06
    case findByTypeValueResponse = 0x07
    case readByTypeRequest = 0x08
    case readByTypeResponse = 0x09
    case readRequest = 0x0A
    case readResponse = 0x0B
    case readBlobRequest = 0x0C
    case readBlobResponse = 0x0D
    case readMultipleRequest = 0x0E
    case readMultipleResponse = 0x0F
    case readByGroupTypeRequest = 0x10
    case readByGroupTypeResponse = 0x11
    case writeRequest = 0x12
    case writeResponse = 0x13
    case prepareWriteRequest = 0x16
    case prepareWriteResponse = 0x17
    case executeWriteRequest = 0x18
    case executeWriteResponse = 0x19
    case readMultipleVariableRequest = 0x20
    case readMultipleVariableResponse = 0x21
    case multipleHandleValueNotification = 0x23
    case handleValueNotification = 0x1B
    case handleValueIndication = 0x1D
    case handleValueConfirmation = 0x1E
    case writeCommand = 0x52
    case signedWriteCommand = 0xD2

    /// Command Flag (bit 6): the PDU is a command and is never answered.
    public static func isCommand(_ raw: UInt8) -> Bool { raw & 0x40 != 0 }

    /// Authentication Signature Flag (bit 7).
    public static func isSigned(_ raw: UInt8) -> Bool { raw & 0x80 != 0 }

    public var isCommand: Bool { Self.isCommand(rawValue) }

    /// Requests a client sends to a server; each expects exactly one response
    /// (the paired opcode, or an Error Response).
    public var isClientRequest: Bool { responseOpcode != nil }

    /// The response that answers this request (§3.4.8 table).
    public var responseOpcode: ATTOpcode? {
        switch self {
        case .exchangeMTURequest: .exchangeMTUResponse
        case .findInformationRequest: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeResponse
        case .readRequest: .readResponse
        case .readBlobRequest: .readBlobResponse
        case .readMultipleRequest: .readMultipleResponse
        case .readByGroupTypeRequest: .readByGroupTypeResponse
        case .writeRequest: .writeResponse
        case .prepareWriteRequest: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteResponse
        case .readMultipleVariableRequest: .readMultipleVariableResponse
        default: nil
        }
    }

    public var description: String {
        let s = String(rawValue, radix: 16, uppercase: true)
        return "\(self.name)(0x\(s.count == 1 ? "0" + s : s))"
    }

    private var name: String {
        switch self {
        case .errorResponse: "ATT_ERROR_RSP"
        case .exchangeMTURequest: "ATT_EXCHANGE_MTU_REQ"
        case .exchangeMTUResponse: "ATT_EXCHANGE_MTU_RSP"
        case .findInformationRequest: "ATT_FIND_INFORMATION_REQ"
        case .findInformationResponse: "ATT_FIND_INFORMATION_RSP"
        case .findByTypeValueRequest: "ATT_FIND_BY_TYPE_VALUE_REQ"
        case .findByTypeValueResponse: "ATT_FIND_BY_TYPE_VALUE_RSP"
        case .readByTypeRequest: "ATT_READ_BY_TYPE_REQ"
        case .readByTypeResponse: "ATT_READ_BY_TYPE_RSP"
        case .readRequest: "ATT_READ_REQ"
        case .readResponse: "ATT_READ_RSP"
        case .readBlobRequest: "ATT_READ_BLOB_REQ"
        case .readBlobResponse: "ATT_READ_BLOB_RSP"
        case .readMultipleRequest: "ATT_READ_MULTIPLE_REQ"
        case .readMultipleResponse: "ATT_READ_MULTIPLE_RSP"
        case .readByGroupTypeRequest: "ATT_READ_BY_GROUP_TYPE_REQ"
        case .readByGroupTypeResponse: "ATT_READ_BY_GROUP_TYPE_RSP"
        case .writeRequest: "ATT_WRITE_REQ"
        case .writeResponse: "ATT_WRITE_RSP"
        case .prepareWriteRequest: "ATT_PREPARE_WRITE_REQ"
        case .prepareWriteResponse: "ATT_PREPARE_WRITE_RSP"
        case .executeWriteRequest: "ATT_EXECUTE_WRITE_REQ"
        case .executeWriteResponse: "ATT_EXECUTE_WRITE_RSP"
        case .readMultipleVariableRequest: "ATT_READ_MULTIPLE_VARIABLE_REQ"
        case .readMultipleVariableResponse: "ATT_READ_MULTIPLE_VARIABLE_RSP"
        case .multipleHandleValueNotification: "ATT_MULTIPLE_HANDLE_VALUE_NTF"
        case .handleValueNotification: "ATT_HANDLE_VALUE_NTF"
        case .handleValueIndication: "ATT_HANDLE_VALUE_IND"
        case .handleValueConfirmation: "ATT_HANDLE_VALUE_CFM"
        case .writeCommand: "ATT_WRITE_CMD"
        case .signedWriteCommand: "ATT_SIGNED_WRITE_CMD"
        }
    }
}
