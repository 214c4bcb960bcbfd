/// Gathers one central's writes to RPC Command into frames: a client may write a frame in one
/// (long) write or in pieces of ATT_MTU - 3 bytes (the spec's note on 20-byte packets).
struct ImprovFrameAssembler {
    enum Output: Equatable {
        case frame(ImprovFrame)
        /// Bad checksum: the bytes gathered are dropped.
        case invalid
    }
    private(set) var buffer: [UInt8] = []

    /// The frames (or checksum failures) `bytes` completes, in order.
    mutating func push(_ bytes: [UInt8]) -> [Output] {
        buffer += bytes
        var out: [Output] = []
        while buffer.count >= 2, buffer.count >= Int(buffer[1]) + 3 {
            let n = Int(buffer[1])
            let frame = Array(buffer[0..<n + 3])
            buffer.removeFirst(n + 3)
            if ImprovFrame.checksum(frame.dropLast()) == frame[n + 2] {
                out.append(.frame(ImprovFrame(command: frame[0], data: Array(frame[2..<n + 2]))))
            } else {
                out.append(.invalid)
            }
        }
        return out
    }

    mutating func reset() { buffer = [] }
}
