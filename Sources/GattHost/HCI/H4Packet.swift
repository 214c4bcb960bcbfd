import GattCore

/// One HCI packet with its H4 packet type (Core Spec Vol 4 Part A §2).
/// `body` is the HCI packet itself (header included), without the indicator byte.
///
/// An ACL data packet the host sends is kept as the L2CAP frame's payload it carries part of
/// and its headers (`ACLFragmentHeaders`): the PDU's bytes are copied once, by the writer,
/// straight into the transport's buffer (`bodyParts`), not first into a packet of their own.
/// Two packets are equal when their types and bodies are, however they are kept.
public struct H4Packet: Sendable, Hashable {
    public var type: H4PacketType
    /// The body; for an outgoing ACL fragment, the L2CAP payload it carries part of.
    private var bytes: [UInt8]
    /// An outgoing ACL fragment's headers (else nil: `bytes` is the body).
    private var fragment: ACLFragmentHeaders?

    public init(type: H4PacketType, body: [UInt8]) {
        self.type = type
        self.bytes = body
        self.fragment = nil
    }

    /// The HCI ACL data packet (Vol 4 Part E §5.4.2) that carries bytes `frameBytes` of the
    /// L2CAP basic frame (Vol 3 Part A §3.1) of `payload` on `channel`; the payload is kept,
    /// not copied.
    init(aclOf payload: [UInt8], channel: L2CAPChannelID, handle: UInt16, frameBytes: Range<Int>) {
        self.type = .acl
        self.bytes = payload
        self.fragment = ACLFragmentHeaders(
            handleWord: handle & 0x0FFF | (frameBytes.lowerBound == 0 ? 0 : UInt16(ACLPacketBoundary.continuing.rawValue) << 12),
            frameHeader: UInt32(payload.count & 0xFFFF) | UInt32(channel.rawValue) << 16,
            frameBytes: frameBytes)
    }

    public init(command: HCICommand) { self.init(type: .command, body: command.encoded()) }
    public init(acl: HCIACLPacket) { self.init(type: .acl, body: acl.encoded()) }
    public init(event: HCIEvent) { self.init(type: .event, body: event.encoded()) }

    /// The HCI packet, header included (an outgoing ACL fragment's bytes are gathered here).
    public var body: [UInt8] {
        get {
            guard fragment != nil else { return bytes }
            let (prefix, count, rest) = bodyParts
            var b: [UInt8] = []
            b.reserveCapacity(count + rest.count)
            for k in 0..<count { b.append(UInt8(truncatingIfNeeded: prefix >> (8 * UInt64(k)))) }
            b.append(contentsOf: rest)
            return b
        }
        set {
            bytes = newValue
            fragment = nil
        }
    }

    /// The body's length.
    public var bodyCount: Int { fragment.map { ACLFragmentHeaders.aclHeaderLength + $0.frameBytes.count } ?? bytes.count }

    /// The body as it is kept, for a writer that copies it once: the first `prefixCount`
    /// bytes of `prefix`, least significant first (an ACL fragment's headers, up to 8), then
    /// `rest` (a slice of the kept bytes, not a copy).
    public var bodyParts: (prefix: UInt64, prefixCount: Int, rest: ArraySlice<UInt8>) {
        guard let f = fragment else { return (0, 0, bytes[...]) }
        let r = f.frameBytes
        let frameHeaderLength = ACLFragmentHeaders.frameHeaderLength
        // The ACL header: handle and flags, then the data length (Vol 4 Part E §5.4.2).
        var prefix = UInt64(f.handleWord) | UInt64(r.count & 0xFFFF) << 16
        var count = ACLFragmentHeaders.aclHeaderLength
        // The L2CAP header's bytes in this packet: all four, or those a tiny buffer leaves it.
        var k = r.lowerBound
        while k < min(r.upperBound, frameHeaderLength) {
            prefix |= (UInt64(f.frameHeader >> (8 * UInt32(k))) & 0xFF) << (8 * UInt64(count))
            count += 1
            k += 1
        }
        guard r.upperBound > frameHeaderLength else { return (prefix, count, bytes[0..<0]) }
        return (prefix, count, bytes[(max(r.lowerBound, frameHeaderLength) - frameHeaderLength)..<(r.upperBound - frameHeaderLength)])
    }

    /// Indicator byte followed by the HCI packet.
    public var encoded: [UInt8] { [type.rawValue] + body }

    public static func == (a: H4Packet, b: H4Packet) -> Bool {
        a.type == b.type && (a.fragment == nil && b.fragment == nil ? a.bytes == b.bytes : a.body == b.body)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(body)
    }

    /// Decodes exactly one H4 packet (for datagram transports such as the HCI user
    /// channel, where each read is one packet): the indicator must be known and the
    /// header's length must match the bytes present.
    public init(decoding bytes: [UInt8]) throws(H4DeframerError) {
        guard let indicator = bytes.first else { throw .truncated(expected: 1, actual: 0) }
        guard let type = H4PacketType(rawValue: indicator) else { throw .invalidPacketIndicator(indicator) }
        let body = bytes.dropFirst()
        guard body.count >= type.headerLength else {
            throw .truncated(expected: 1 + type.headerLength, actual: bytes.count)
        }
        let total = 1 + type.headerLength + type.declaredLength(header: body.prefix(type.headerLength))
        guard bytes.count == total else { throw .lengthMismatch(type: type, expected: total, actual: bytes.count) }
        self.init(type: type, body: Array(body))
    }
}

/// The headers of an outgoing ACL data packet kept as part of its L2CAP frame's payload.
struct ACLFragmentHeaders: Sendable, Hashable {
    static let aclHeaderLength = 4
    static let frameHeaderLength = 4
    /// Handle and packet boundary flag: the ACL header's first two bytes.
    var handleWord: UInt16
    /// The L2CAP basic frame's header: payload length, then the channel id.
    var frameHeader: UInt32
    /// The bytes of the frame (its header, then its payload) this packet carries.
    var frameBytes: Range<Int>
}

/// Why bytes could not be framed as H4 packets.
public enum H4DeframerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A byte where a packet should start is not a packet indicator (0x01...0x05).
    /// `H4Deframer` has dropped it.
    case invalidPacketIndicator(UInt8)
    /// `H4Packet(decoding:)` only: fewer bytes than the header needs.
    case truncated(expected: Int, actual: Int)
    /// `H4Packet(decoding:)` only: the header's length disagrees with the bytes present.
    case lengthMismatch(type: H4PacketType, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .invalidPacketIndicator(let b):
            "invalid H4 packet indicator \(codecHex(b, digits: 2)) (expected 0x01...0x05); byte dropped"
        case .truncated(let expected, let actual):
            "H4 packet of \(actual) bytes is shorter than its \(expected)-byte header"
        case .lengthMismatch(let type, let expected, let actual):
            "H4 \(type) packet: header declares \(expected) bytes in all, got \(actual)"
        }
    }
}
