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
        push(bytes) { out.append($0) }
        return out
    }

    /// Feeds received bytes; `deliver` gets each line they finish (or `.tooLong`), in order.
    /// Scans for newlines and copies whole runs: one allocation per line.
    public mutating func push<C: Collection>(_ bytes: C, _ deliver: (Output) -> Void) where C.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ push(contiguous: $0, deliver) }) == nil {
            Array(bytes).withUnsafeBufferPointer { push(contiguous: $0, deliver) }
        }
    }

    private mutating func push(contiguous p: UnsafeBufferPointer<UInt8>, _ deliver: (Output) -> Void) {
        var start = 0
        while start < p.count {
            let newline = p[start...].firstIndex(of: 0x0A)
            let run = UnsafeBufferPointer(rebasing: p[start..<(newline ?? p.count)])
            start = newline.map { $0 + 1 } ?? p.count
            if !discarding {
                // One extra byte of slack for a "\r" before the newline.
                let count = buffer.count + run.count
                let last = run.last ?? buffer.last
                if count > maximumLength + 1 || (count == maximumLength + 1 && last != 0x0D) {
                    deliver(.tooLong)
                    discarding = true
                    buffer = []
                } else if newline != nil {
                    var line = buffer.isEmpty ? Array(run) : buffer + run
                    buffer.removeAll(keepingCapacity: true)
                    if line.last == 0x0D { line.removeLast() }
                    if !line.isEmpty { deliver(.line(line)) }
                } else {
                    buffer.append(contentsOf: run)
                }
            }
            if newline != nil { discarding = false }
        }
    }

    /// Bytes of an unfinished line held.
    public var bufferedCount: Int { buffer.count }
}
