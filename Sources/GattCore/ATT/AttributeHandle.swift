/// An attribute handle (Core Spec Vol 3 Part F §3.2.2): 0x0001...0xFFFF; 0x0000 is reserved.
public struct AttributeHandle: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ value: UInt16) { self.rawValue = value }
    public init(integerLiteral value: UInt16) { self.rawValue = value }

    public static let min = AttributeHandle(0x0001)
    public static let max = AttributeHandle(0xFFFF)

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// "0x002A"
    public var description: String {
        let s = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - s.count) + s
    }
}
