import GattCore

/// Security Manager Protocol command codes (Core Spec Vol 3 Part H §3.3).
public struct SMPCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let pairingRequest = Self(rawValue: 0x01)
    public static let pairingResponse = Self(rawValue: 0x02)
    public static let pairingConfirm = Self(rawValue: 0x03)
    public static let pairingRandom = Self(rawValue: 0x04)
    public static let pairingFailed = Self(rawValue: 0x05)
    public static let encryptionInformation = Self(rawValue: 0x06)
    public static let centralIdentification = Self(rawValue: 0x07)
    public static let identityInformation = Self(rawValue: 0x08)
    public static let identityAddressInformation = Self(rawValue: 0x09)
    public static let signingInformation = Self(rawValue: 0x0A)
    public static let securityRequest = Self(rawValue: 0x0B)
    public static let pairingPublicKey = Self(rawValue: 0x0C)
    public static let pairingDHKeyCheck = Self(rawValue: 0x0D)
    public static let pairingKeypressNotification = Self(rawValue: 0x0E)

    public var description: String {
        let names = [
            "Pairing Request", "Pairing Response", "Pairing Confirm", "Pairing Random", "Pairing Failed",
            "Encryption Information", "Central Identification", "Identity Information",
            "Identity Address Information", "Signing Information", "Security Request", "Pairing Public Key",
            "Pairing DHKey Check", "Pairing Keypress Notification",
        ]
        let i = Int(rawValue) - 1
        return i >= 0 && i < names.count ? names[i] : "SMP code \(codecHex(rawValue, digits: 2))"
    }
}
