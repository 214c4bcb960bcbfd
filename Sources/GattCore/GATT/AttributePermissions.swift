/// Attribute permissions, with Core Bluetooth's names and bit values
/// (`CBAttributePermissions`).
public struct AttributePermissions: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let readable = Self(rawValue: 0x01)
    public static let writeable = Self(rawValue: 0x02)
    public static let readEncryptionRequired = Self(rawValue: 0x04)
    public static let writeEncryptionRequired = Self(rawValue: 0x08)
    /// Reading needs a link encrypted with an authenticated (MITM-protected) key.
    public static let readAuthenticationRequired = Self(rawValue: 0x10)
    /// Writing needs a link encrypted with an authenticated (MITM-protected) key.
    public static let writeAuthenticationRequired = Self(rawValue: 0x20)

    public static let names: [(String, AttributePermissions)] = [
        ("readable", .readable), ("writeable", .writeable),
        ("read_encryption_required", .readEncryptionRequired),
        ("write_encryption_required", .writeEncryptionRequired),
        ("read_authentication_required", .readAuthenticationRequired),
        ("write_authentication_required", .writeAuthenticationRequired),
    ]

    public var canRead: Bool { !isDisjoint(with: [.readable, .readEncryptionRequired, .readAuthenticationRequired]) }
    public var canWrite: Bool { !isDisjoint(with: [.writeable, .writeEncryptionRequired, .writeAuthenticationRequired]) }
    public var nameList: [String] { Self.names.filter { contains($0.1) }.map { $0.0 } }
}
