import GattCore

/// Result of an L2CAP_LE_CREDIT_BASED_CONNECTION_RSP (Core Spec Vol 3 Part A §4.23).
public struct LECreditBasedConnectionResult: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let successful = Self(rawValue: 0x0000)
    public static let lePSMNotSupported = Self(rawValue: 0x0002)
    public static let noResourcesAvailable = Self(rawValue: 0x0004)
    public static let insufficientAuthentication = Self(rawValue: 0x0005)
    public static let insufficientAuthorization = Self(rawValue: 0x0006)
    public static let encryptionKeySizeTooShort = Self(rawValue: 0x0007)
    public static let insufficientEncryption = Self(rawValue: 0x0008)
    public static let invalidSourceCID = Self(rawValue: 0x0009)
    public static let sourceCIDAlreadyAllocated = Self(rawValue: 0x000A)
    public static let unacceptableParameters = Self(rawValue: 0x000B)
    /// Credit Based Connection Response only (§4.26): "All connections refused – invalid parameters".
    public static let invalidParameters = Self(rawValue: 0x000C)

    public var description: String {
        let names: [UInt16: String] = [
            0x0000: "successful", 0x0002: "LE_PSM not supported", 0x0004: "no resources available",
            0x0005: "insufficient authentication", 0x0006: "insufficient authorization", 0x0007: "encryption key size too short",
            0x0008: "insufficient encryption", 0x0009: "invalid source CID", 0x000A: "source CID already allocated",
            0x000B: "unacceptable parameters", 0x000C: "invalid parameters",
        ]
        return "\(names[rawValue] ?? "reserved") (\(codecHex(rawValue, digits: 4)))"
    }
}
