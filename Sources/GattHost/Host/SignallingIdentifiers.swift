/// The identifiers of the LE signalling requests we send (Core Spec Vol 3 Part A §4: never
/// 0x00, a new one for each request), shared by every link.
struct SignallingIdentifiers: Sendable {
    private var last: UInt8 = 0

    mutating func next() -> UInt8 {
        last = last == 255 ? 1 : last + 1
        return last
    }
}
