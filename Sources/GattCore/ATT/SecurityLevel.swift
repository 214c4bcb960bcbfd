/// The security of the link an ATT bearer runs on (LE security mode 1 levels,
/// Core Spec Vol 3 Part C §10.2.1).
public enum SecurityLevel: Int, Comparable, Sendable, CustomStringConvertible {
    /// Level 1: no encryption.
    case low = 1
    /// Level 2: unauthenticated pairing with encryption.
    case medium = 2
    /// Level 3/4: authenticated pairing with encryption (MITM protection).
    case high = 3

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var isEncrypted: Bool { self >= .medium }
    public var isAuthenticated: Bool { self >= .high }
    public var description: String {
        switch self {
        case .low: "low"
        case .medium: "medium"
        case .high: "high"
        }
    }
}
