import DequeModule

/// Per-connection ATT state kept by `ATTServer` (Core Spec Vol 3 Part F §3.2.11:
/// the ATT_MTU, the Client Characteristic Configuration values and the Client
/// Supported Features are per bearer/client; the attribute values are shared).
struct ATTBearer: Sendable {
    var security: SecurityLevel
    /// The encryption key size in octets, when the transport reported it.
    var keySize: Int?
    /// ATT_MTU (§3.2.8); 23 until an Exchange MTU.
    var mtu: Int = 23
    var mtuExchanged = false
    /// CCCD value per characteristic index; absent = 0x0000.
    var cccd: [Int: UInt16] = [:]
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

    var prepareQueue: [PreparedWrite] = []
    var preparedBytes = 0

    /// PDUs waiting for the transport to pull them.
    var outgoing: Deque<OutgoingPDU> = []
    /// Notifications and indications in `outgoing`.
    var queuedUpdates = 0
    /// Indications waiting behind the outstanding one.
    var waitingIndications: Deque<WaitingIndication> = []
    /// The indication sent and not yet confirmed, with its transaction deadline.
    var outstandingIndication: (characteristic: Int, deadline: Duration)?

    /// A request waiting for its deferred accesses to be answered; later PDUs are held.
    var pending: PendingOperation?
    var held: Deque<[UInt8]> = []

    init(security: SecurityLevel) { self.security = security }

    /// Notifications/indications counted against `maxQueuedUpdates`.
    var updateCount: Int { queuedUpdates + waitingIndications.count }

    struct PreparedWrite: Sendable, Equatable {
        var handle: AttributeHandle
        var offset: Int
        var value: [UInt8]
    }

    struct OutgoingPDU: Sendable {
        var bytes: [UInt8]
        var isUpdate: Bool
    }

    struct WaitingIndication: Sendable {
        var characteristic: Int
        var bytes: [UInt8]
    }
}

/// A request of a bearer waiting for its deferred accesses (`ATTServerEvent.deferredAccess`).
struct PendingOperation: Sendable {
    enum Kind: Sendable {
        /// Read or Read Blob of a `.deferred` value.
        case read(ATTOpcode)
        /// Write Request of a `.deferred` value.
        case write
        /// Execute Write with `.deferred` values in it: the server's own writes are
        /// applied (or committed) only when every deferred write succeeded.
        case execute(storedWrites: [(AttributeHandle, [UInt8])])
        /// A Write Request (`op` .writeRequest) or Execute Write (.executeWriteRequest)
        /// waiting for its commit; `writes` are applied on success.
        case commit(ATTOpcode, writes: [(AttributeHandle, [UInt8])])
    }
    var kind: Kind
    /// Whether it waits for a commit (never failed when the answerer of reads and writes leaves).
    var isCommit: Bool {
        if case .commit = kind { return true }
        return false
    }
    /// The handle reported in an error response when the request fails or times out.
    var handle: AttributeHandle
    /// Deferred accesses still unanswered, with the handle each concerns.
    var waiting: [(id: PendingRequestID, handle: AttributeHandle)]
    var deadline: Duration
}
