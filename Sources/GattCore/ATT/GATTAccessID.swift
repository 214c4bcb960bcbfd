/// Names one `GATTAccess` until it is answered (the back end picks it: its pending D-Bus call).
public struct GATTAccessID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "access \(rawValue)" }
}
