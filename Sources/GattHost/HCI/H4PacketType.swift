import GattCore

/// The H4 (UART transport layer) packet indicator (Core Spec Vol 4 Part A §2).
public enum H4PacketType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05

    /// Bytes of the HCI packet header that follows the indicator.
    var headerLength: Int {
        switch self {
        case .command, .sco: 3  // opcode/handle (2), length (1)
        case .acl, .iso: 4  // handle (2), length (2)
        case .event: 2  // event code (1), length (1)
        }
    }

    /// The parameter/data length declared by a complete `header`.
    func declaredLength(header h: ArraySlice<UInt8>) -> Int {
        let i = h.startIndex  // (indexed in place: no array per packet)
        switch self {
        case .command, .sco: return Int(h[i + 2])
        case .event: return Int(h[i + 1])
        case .acl: return Int(h[i + 2]) | Int(h[i + 3]) << 8
        case .iso: return (Int(h[i + 2]) | Int(h[i + 3]) << 8) & 0x3FFF  // 14-bit ISO_Data_Load_Length
        }
    }

    public var description: String {
        switch self {
        case .command: "command"
        case .acl: "ACL"
        case .sco: "SCO"
        case .event: "event"
        case .iso: "ISO"
        }
    }
}
