/// Limits and timeouts of an `ATTServer`.
public struct ATTServerConfiguration: Equatable, Sendable {
    /// The server's Rx MTU announced in Exchange MTU (23...517).
    public var maxMTU: Int = 517
    /// Encrypted links with a shorter key get Insufficient Encryption Key Size (0x0C) for
    /// attributes that need encryption or authentication (Vol 3 Part C §10.3.1, 7–16 octets).
    public var minimumKeySize: Int = 7
    /// Notifications/indications each bearer may hold not yet pulled by the transport
    /// (plus indications waiting behind the outstanding one).
    public var maxQueuedUpdates: Int = 32
    /// Time the answerer has to answer a read or write deferred access.
    public var deferredAccessTimeout: Duration = .seconds(5)
    /// ATT transaction timeout for indications (§3.3.3).
    public var transactionTimeout: Duration = .seconds(30)
    /// Prepare Write queue limits per client.
    public var maxPreparedWrites: Int = 64
    public var maxPreparedBytes: Int = 4096
    /// PDUs held while a deferred access waits for its answer; beyond this
    /// a misbehaving client's extra PDUs are dropped.
    public var maxHeldPDUs: Int = 64
    /// Time the answerer has to answer a commit before the client gets Unlikely Error.
    public var commitTimeout: Duration = .seconds(30)
    public init() {}
}
