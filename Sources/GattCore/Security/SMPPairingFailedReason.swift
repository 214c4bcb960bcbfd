/// Pairing Failed reason codes (Core Spec Vol 3 Part H §3.5.5).
public struct SMPPairingFailedReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryFailed = Self(rawValue: 0x01)
    public static let oobNotAvailable = Self(rawValue: 0x02)
    public static let authenticationRequirements = Self(rawValue: 0x03)
    public static let confirmValueFailed = Self(rawValue: 0x04)
    public static let pairingNotSupported = Self(rawValue: 0x05)
    public static let encryptionKeySize = Self(rawValue: 0x06)
    public static let commandNotSupported = Self(rawValue: 0x07)
    public static let unspecifiedReason = Self(rawValue: 0x08)
    public static let repeatedAttempts = Self(rawValue: 0x09)
    public static let invalidParameters = Self(rawValue: 0x0A)
    public static let dhKeyCheckFailed = Self(rawValue: 0x0B)
    public static let numericComparisonFailed = Self(rawValue: 0x0C)
    public static let brEdrPairingInProgress = Self(rawValue: 0x0D)
    public static let crossTransportKeyDerivationNotAllowed = Self(rawValue: 0x0E)
    public static let keyRejected = Self(rawValue: 0x0F)
    public static let busy = Self(rawValue: 0x10)

    public var description: String {
        let names = [
            "Passkey Entry Failed", "OOB Not Available", "Authentication Requirements", "Confirm Value Failed",
            "Pairing Not Supported", "Encryption Key Size", "Command Not Supported", "Unspecified Reason",
            "Repeated Attempts", "Invalid Parameters", "DHKey Check Failed", "Numeric Comparison Failed",
            "BR/EDR pairing in progress", "Cross-transport Key Derivation/Generation not allowed", "Key Rejected", "Busy",
        ]
        let i = Int(rawValue) - 1
        return i >= 0 && i < names.count ? names[i] : "reason \(codecHex(rawValue, digits: 2))"
    }
}
