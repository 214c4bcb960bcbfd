import GattCore

/// A streaming H4 deframer: bytes in any chunking in, whole packets out.
///
/// ```swift
/// var deframer = H4Deframer()
/// deframer.append(chunk)
/// while true {
///     do { guard let packet = try deframer.nextPacket() else { break }; handle(packet) }
///     catch { log(error) }   // the bad byte is gone; keep calling nextPacket()
/// }
/// ```
///
/// Error recovery: when the byte where a packet should start is not a valid
/// indicator, `nextPacket()` drops that one byte and throws
/// `.invalidPacketIndicator`; the next call goes on with the following byte, so the
/// deframer resynchronises on the next byte that looks like an indicator. H4 has
/// no sync pattern, so what follows garbage may still be mis-framed: the strict
/// HCI decoders reject such packets, and a UART host that sees this error should
/// reset the controller to be sure. The deframer itself never traps and holds at
/// most one partial packet (≤ 65,540 bytes) plus the unread input.
public struct H4Deframer: Sendable {
    private var buffer: [UInt8] = []
    private var head = 0

    public init() {}

    /// Bytes received but not yet returned as packets.
    public var bufferedByteCount: Int { buffer.count - head }

    /// Adds received bytes.
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes from a read buffer: one copy, with no generic collection code
    /// run per byte (the generic `append` is not specialised across modules).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if head > 0, head >= buffer.count / 2 {
            buffer.removeFirst(head)
            head = 0
        }
    }

    /// The next complete packet, nil when more bytes are needed. Throws (after
    /// dropping the offending byte) on an invalid packet indicator.
    public mutating func nextPacket() throws(H4DeframerError) -> H4Packet? {
        guard head < buffer.count else { return nil }
        let indicator = buffer[head]
        guard let type = H4PacketType(rawValue: indicator) else {
            head += 1
            throw .invalidPacketIndicator(indicator)
        }
        let available = buffer.count - head - 1
        guard available >= type.headerLength else { return nil }
        let headerStart = head + 1
        let length = type.declaredLength(header: buffer[headerStart..<headerStart + type.headerLength])
        let bodyLength = type.headerLength + length
        guard available >= bodyLength else { return nil }
        let packet = H4Packet(type: type, body: Array(buffer[headerStart..<headerStart + bodyLength]))
        head = headerStart + bodyLength
        return packet
    }

    /// One result of `feed(_:)`.
    public enum Output: Sendable, Hashable {
        case packet(H4Packet)
        case error(H4DeframerError)
    }

    /// Appends `bytes` and returns every complete packet and error, in stream order.
    public mutating func feed<C: Collection>(_ bytes: C) -> [Output] where C.Element == UInt8 {
        append(bytes)
        var out: [Output] = []
        while true {
            do {
                guard let p = try nextPacket() else { return out }
                out.append(.packet(p))
            } catch {
                out.append(.error(error))
            }
        }
    }
}
