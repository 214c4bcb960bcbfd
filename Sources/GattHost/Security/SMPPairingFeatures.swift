import GattCore


/// AuthReq (Core Spec Vol 3 Part H §3.5.1, Figure 3.3): Bonding_Flags (2 bits),
/// MITM, SC, Keypress, CT2; unknown bits are preserved.
public struct SMPAuthenticationRequirements: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags 0b01: the device requests bonding.
    public static let bonding = Self(rawValue: 0x01)
    /// Man-in-the-middle protection requested.
    public static let mitm = Self(rawValue: 0x04)
    /// LE Secure Connections supported.
    public static let secureConnections = Self(rawValue: 0x08)
    /// Keypress notifications requested (Passkey Entry).
    public static let keypress = Self(rawValue: 0x10)
    /// h7 supported for cross-transport key derivation.
    public static let ct2 = Self(rawValue: 0x20)
}

/// Initiator/Responder Key Distribution (Core Spec Vol 3 Part H §3.6.1, Figure 3.11).
public struct SMPKeyDistribution: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LTK, EDIV and Rand (legacy pairing only; ignored with Secure Connections).
    public static let encryptionKey = Self(rawValue: 0x01)
    /// IRK and identity address.
    public static let identityKey = Self(rawValue: 0x02)
    /// CSRK.
    public static let signingKey = Self(rawValue: 0x04)
    /// Derive a BR/EDR link key (not supported by gattd).
    public static let linkKey = Self(rawValue: 0x08)
}

/// The six parameter octets shared by Pairing Request and Pairing Response
/// (Core Spec Vol 3 Part H §3.5.1, §3.5.2).
public struct SMPPairingFeatures: Sendable, Hashable {
    /// Our input and output.
    public var ioCapability: SMPIOCapability
    /// OOB data flag: authentication data from a remote device is present.
    public var oobDataPresent: Bool
    public var authenticationRequirements: SMPAuthenticationRequirements
    /// Maximum Encryption Key Size, 7–16 octets.
    public var maximumEncryptionKeySize: UInt8
    public var initiatorKeyDistribution: SMPKeyDistribution
    public var responderKeyDistribution: SMPKeyDistribution

    /// The features of a Pairing Request or Response.
    public init(
        ioCapability: SMPIOCapability, oobDataPresent: Bool = false, authenticationRequirements: SMPAuthenticationRequirements,
        maximumEncryptionKeySize: UInt8 = 16, initiatorKeyDistribution: SMPKeyDistribution = [],
        responderKeyDistribution: SMPKeyDistribution = []
    ) {
        self.ioCapability = ioCapability
        self.oobDataPresent = oobDataPresent
        self.authenticationRequirements = authenticationRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }

    /// The six parameter octets in PDU order.
    public var encoded: [UInt8] {
        [ioCapability.rawValue, oobDataPresent ? 1 : 0, authenticationRequirements.rawValue, maximumEncryptionKeySize,
         initiatorKeyDistribution.rawValue, responderKeyDistribution.rawValue]
    }

    /// IOcap as f6 takes it (§2.2.8), little-endian: IO capability, OOB flag, AuthReq.
    var f6IOCap: [UInt8] { Array(encoded.prefix(3)) }

    /// Decodes six octets. Reserved IO capability or OOB values are `invalidValue`;
    /// the key size is range-checked by the pairing, not here.
    init(decoding d: [UInt8], code: SMPCode) throws(SMPDecodingError) {
        guard d.count == 6 else { throw .invalidLength(code: code, expected: 6, actual: d.count) }
        guard let io = SMPIOCapability(rawValue: d[0]) else { throw .invalidValue(code: code, field: "IO Capability") }
        guard d[1] <= 1 else { throw .invalidValue(code: code, field: "OOB data flag") }
        self.init(
            ioCapability: io, oobDataPresent: d[1] == 1, authenticationRequirements: .init(rawValue: d[2]),
            maximumEncryptionKeySize: d[3], initiatorKeyDistribution: .init(rawValue: d[4]),
            responderKeyDistribution: .init(rawValue: d[5]))
    }
}
