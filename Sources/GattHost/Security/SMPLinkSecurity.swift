import GattCore

/// The security properties an encryption key gives a link (Core Spec Vol 3
/// Part C §10.2.1 LE security mode 1 levels 2–4).
public struct SMPLinkSecurity: Sendable, Hashable {
    /// Encryption key size in octets (7–16).
    public var keySize: Int
    /// MITM-protected pairing (not Just Works).
    public var authenticated: Bool
    /// LE Secure Connections pairing.
    public var secureConnections: Bool

    /// From the three properties.
    public init(keySize: Int, authenticated: Bool, secureConnections: Bool) {
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
    }

    /// The ATT server's level for a link encrypted with this key.
    public var level: SecurityLevel { authenticated ? .high : .medium }
}

extension Bond {
    /// What a link encrypted with this bond's LTK is worth.
    public var security: SMPLinkSecurity {
        SMPLinkSecurity(keySize: keySize, authenticated: authenticated, secureConnections: secureConnections)
    }
}
