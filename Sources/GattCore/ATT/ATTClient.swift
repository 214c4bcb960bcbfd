/// Per-client ATT/GATT server state (one connected central, however many ATT bearers it has):
/// its link's security, CCCDs (Vol 3 Part G §3.3.3.3), Client Supported Features (§7.2), change
/// awareness (§2.5.2.1), signing key, and the prepare queue (Vol 3 Part F §3.4.6: one per client).
/// Which bearers it has, and which carries each characteristic's updates, is `ATTBearers`'.
/// All of it is the client's whatever bearer a PDU comes on. With more than one bearer, only a
/// Database Hash read followed by a request makes a change-unaware client change-aware (Vol 3
/// Part G §2.5.2.1); a Service Changed confirmation then only settles what it was owed.
struct ATTClient: Sendable {
    var security: SecurityLevel
    /// The encryption key size in octets, when the transport reported it.
    var keySize: Int?
    /// CCCD value per characteristic index; absent = 0x0000.
    var cccd: [CharacteristicIndex: UInt16] = [:]
    /// Client Supported Features value (Vol 3 Part G §7.2).
    var clientFeatures: [UInt8] = [0x00]
    /// Connection Signature Resolving Key (little-endian, as SMP distributes it)
    /// and the last accepted Sign Counter.
    var csrk: [UInt8]?
    var lastSignCounter: UInt32?
    /// Change awareness (Vol 3 Part G §2.5.2.1); a new client starts change-aware.
    var awareness: ChangeAwareness = .changeAware
    /// While change-unaware: the Database Hash the client last was change-aware of.
    var awareHash: [UInt8] = []
    /// A Service Changed this client has not confirmed: the affected range.
    var serviceChangedOwed: HandleRange?
    /// A bonded client: its CCCD and Client Supported Features writes are acknowledged once
    /// committed (`DeferredAccess.commit`, Vol 3 Part G §3.3.3.3).
    var isBonded = false

    /// Prepared writes of every bearer of the client (Vol 3 Part F §3.4.6: "each client's queue").
    var prepareQueue: [PreparedWrite] = []
    var preparedBytes = 0

    init(security: SecurityLevel) { self.security = security }

    struct PreparedWrite: Sendable, Equatable {
        var handle: AttributeHandle
        var offset: Int
        var value: [UInt8]
    }

    /// Bit 2 of Client Supported Features: Multiple Handle Value Notifications (Vol 3 Part G §7.2).
    static let multipleHandleValueNotificationsFeature: UInt8 = 0x04
    /// The Client Supported Features bits the server keeps (Vol 3 Part G §7.2): Robust
    /// Caching (0), Enhanced ATT Bearer (1), Multiple Handle Value Notifications (2). Others
    /// are ignored (read back as 0).
    static let supportedClientFeatures: UInt8 = 0x07

    // MARK: Security (Vol 3 Part C §10.3.1)

    /// An attribute that needs authentication (`authenticated`) or encryption answers
    /// Insufficient Authentication (0x05) without an authenticated key, Insufficient
    /// Encryption (0x0F) on an unencrypted link, and Insufficient Encryption Key Size (0x0C)
    /// when the link's key is shorter than `minimumKeySize`.
    static func securityError(_ security: SecurityLevel, keySize: Int?, authenticated: Bool, minimumKeySize: Int) -> ATTError? {
        if authenticated, !security.isAuthenticated { return .insufficientAuthentication }
        if !security.isEncrypted { return .insufficientEncryption }
        if let k = keySize, k < minimumKeySize { return .encryptionKeySizeTooShort }
        return nil
    }

    /// `securityError` of this client's link.
    func securityError(authenticated: Bool, minimumKeySize: Int) -> ATTError? {
        Self.securityError(security, keySize: keySize, authenticated: authenticated, minimumKeySize: minimumKeySize)
    }

    // MARK: Updates (Vol 3 Part G §4.10, §4.11)

    /// What one update sends to one client: a notification or an indication.
    enum UpdateKind {
        case notification, indication
    }

    /// Who receives an update, and how: the PDU kind characteristic `c` (`p`) sends to client
    /// `b`, if any. An indication where the client enabled indications, else a notification
    /// where it enabled notifications; none when the characteristic asks for encryption the
    /// link lacks. The one rule of `notify` and `notifyMultiple` (`b` is read in place).
    static func updateKind(_ b: inout ATTClient, characteristic c: CharacteristicIndex, properties p: CharacteristicProperties, minimumKeySize: Int) -> UpdateKind? {
        let bits = b.cccd[c] ?? 0
        if bits & 0x0002 != 0, p.canIndicate {
            return !p.contains(.indicateEncryptionRequired) || b.securityError(authenticated: false, minimumKeySize: minimumKeySize) == nil ? .indication : nil
        }
        guard bits & 0x0001 != 0, p.canNotify else { return nil }
        return !p.contains(.notifyEncryptionRequired) || b.securityError(authenticated: false, minimumKeySize: minimumKeySize) == nil ? .notification : nil
    }

    /// Whether the client takes several values in one Multiple Handle Value Notification.
    var takesMultipleHandleValueNotifications: Bool { (clientFeatures.first ?? 0) & Self.multipleHandleValueNotificationsFeature != 0 }

    // MARK: Writes of its own state

    /// The CCCD bits `p` supports out of `bits` (0x0001 notify, 0x0002 indicate).
    static func cccdBits(_ bits: UInt16, allowedBy p: CharacteristicProperties) -> UInt16 {
        bits & ((p.canNotify ? 0x0001 : 0) | (p.canIndicate ? 0x0002 : 0))
    }

    /// Stores a CCCD value and returns the bits it replaced.
    mutating func writeCCCD(_ c: CharacteristicIndex, _ v: [UInt8]) -> UInt16 {
        let bits = v.count == 2 ? UInt16(v[0]) | UInt16(v[1]) << 8 : 0
        let old = cccd[c] ?? 0
        cccd[c] = bits
        return old
    }

    /// Merges a Client Supported Features write (set bits stay set, §7.2); true when it changed.
    mutating func writeClientFeatures(_ v: [UInt8]) -> Bool {
        let old = clientFeatures
        for (i, byte) in v.enumerated().prefix(1) {
            if i < clientFeatures.count { clientFeatures[i] |= byte & Self.supportedClientFeatures } else { clientFeatures.append(byte & Self.supportedClientFeatures) }
        }
        return clientFeatures != old
    }
}
