/// Splits a byte stream into newline-terminated lines (the control protocol's
/// framing). A line longer than `maximumLength` produces one `.tooLong` and is
/// discarded up to its newline; a trailing "\r" is dropped; empty lines are skipped.
public struct ControlLineFramer: Sendable {
    public enum Output: Sendable, Equatable {
        case line([UInt8])
        case tooLong
    }

    public let maximumLength: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    public init(maximumLength: Int = 64 * 1024) { self.maximumLength = maximumLength }

    /// Feeds received bytes; returns the complete lines they finish.
    public mutating func push<C: Collection>(_ bytes: C) -> [Output] where C.Element == UInt8 {
        var out: [Output] = []
        for b in bytes {
            if b == 0x0A {
                if discarding {
                    discarding = false
                } else {
                    if buffer.last == 0x0D { buffer.removeLast() }
                    if !buffer.isEmpty { out.append(.line(buffer)) }
                }
                buffer.removeAll(keepingCapacity: true)
                continue
            }
            if discarding { continue }
            buffer.append(b)
            // One extra byte of slack for a "\r" before the newline.
            if buffer.count > maximumLength + 1 || (buffer.count == maximumLength + 1 && b != 0x0D) {
                out.append(.tooLong)
                discarding = true
                buffer.removeAll(keepingCapacity: false)
            }
        }
        return out
    }

    /// Bytes of an unfinished line held.
    public var bufferedCount: Int { buffer.count }
}
