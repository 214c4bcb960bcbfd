/// Per-client ATT/GATT server state (one connected central, however many ATT bearers it has):
/// its link's security, CCCDs (Vol 3 Part G §3.3.3.3), Client Supported Features (§7.2), change
/// awareness (§2.5.2.1), signing key, and the prepare queue (Vol 3 Part F §3.4.6: one per client).
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

    /// The client's bearers by channel, the fixed one first, then in the order they opened.
    var channels: [UInt16] = [BearerID.fixedATTChannel]
    /// The bearer (channel) each characteristic's updates take: chosen at its first update
    /// and kept until that bearer closes, so one characteristic's updates reach the client in
    /// the order they were submitted (`ATTServer.updateBearer(of:characteristic:indication:)`).
    var updateChannels: [CharacteristicIndex: UInt16] = [:]

    init(security: SecurityLevel) { self.security = security }

    struct PreparedWrite: Sendable, Equatable {
        var handle: AttributeHandle
        var offset: Int
        var value: [UInt8]
    }
}
