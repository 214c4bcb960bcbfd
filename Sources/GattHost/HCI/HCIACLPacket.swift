import GattCore

/// Packet_Boundary_Flag of an HCI ACL data packet (Core Spec Vol 4 Part E §5.4.2).
public enum ACLPacketBoundary: UInt8, Sendable, Hashable {
    /// First non-automatically-flushable packet of a higher-layer message (host → controller on LE).
    case firstNonFlushable = 0b00
    /// Continuing fragment of a higher-layer message.
    case continuing = 0b01
    /// First automatically-flushable packet (controller → host uses this on LE).
    case firstFlushable = 0b10
    /// A complete automatically-flushable L2CAP PDU (BR/EDR only; deprecated).
    case completeFlushable = 0b11

    /// True for the two "first packet" flags.
    public var isFirst: Bool { self == .firstNonFlushable || self == .firstFlushable }
}

/// An HCI ACL data packet (Core Spec Vol 4 Part E §5.4.2): 12-bit connection handle,
/// packet boundary and broadcast flags, 16-bit data length, data. No H4 indicator.
public struct HCIACLPacket: Sendable, Hashable {
    /// Connection handle, 0x000...0xEFF.
    public var handle: UInt16
    public var packetBoundary: ACLPacketBoundary
    /// Broadcast_Flag (2 bits): 0b00 point-to-point for every LE packet.
    public var broadcastFlag: UInt8
    public var data: [UInt8]

    public static let headerLength = 4

    public init(handle: UInt16, packetBoundary: ACLPacketBoundary, broadcastFlag: UInt8 = 0, data: [UInt8]) {
        self.handle = handle & 0x0FFF
        self.packetBoundary = packetBoundary
        self.broadcastFlag = broadcastFlag & 0b11
        self.data = data
    }

    /// Decodes one ACL packet; the data length field must match the bytes present.
    public init(decoding bytes: [UInt8]) throws(HCIDecodingError) {
        guard bytes.count >= Self.headerLength else {
            throw .truncatedHeader(packet: "ACL data packet", needed: Self.headerLength, actual: bytes.count)
        }
        let word = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        let declared = Int(bytes[2]) | Int(bytes[3]) << 8
        guard bytes.count - Self.headerLength == declared else {
            throw .lengthMismatch(packet: "ACL data packet", declared: declared, actual: bytes.count - Self.headerLength)
        }
        self.handle = word & 0x0FFF
        self.packetBoundary = ACLPacketBoundary(rawValue: UInt8((word >> 12) & 0b11)) ?? .continuing
        self.broadcastFlag = UInt8(word >> 14)
        self.data = Array(bytes[Self.headerLength...])
    }

    /// Header and data. Data beyond 65,535 bytes (which no controller accepts) is cut.
    public func encoded() -> [UInt8] {
        let payload = data.prefix(0xFFFF)
        var w = CodecByteWriter(capacity: Self.headerLength + payload.count)
        w.u16((handle & 0x0FFF) | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcastFlag & 0b11) << 14)
        w.u16(UInt16(payload.count))
        w.append(payload)
        return w.bytes
    }
}
