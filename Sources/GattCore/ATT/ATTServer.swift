/// The sans-I/O ATT server (Core Spec Vol 3 Part F) with GATT server rules (Vol 3 Part G):
/// one shared `GATTDatabase`, one `ATTClient` per connected central and its ATT bearers in
/// `ATTBearers` (the fixed ATT channel, and Enhanced ATT channels opened with
/// `openBearer(_:mtu:)`; every call taking a `ConnectionID` means the fixed bearer). It runs
/// each bearer's transaction and hands the work to its parts: `ATTReadRequests` and
/// `ATTWriteRequests` answer requests, `ServerInitiatedUpdates` fans out new values,
/// `GATTAccesses` serves a back end that runs ATT itself. No I/O and no clocks: time comes in
/// as `now` (a `Duration` since any fixed origin).
///
/// How the event loop drives it:
/// - `connect(_:security:)` / `disconnect(_:)` / `setSecurity(_:_:)` / `setCSRK(_:key:signCounter:)`
///   as links come and go.
/// - `receive(_:from:now:)` with every ATT PDU from a connection (or from one of its bearers).
/// - `tick(now:)` whenever `nextDeadline` passes (indication transaction timeout
///   §3.3.3 → `.closeBearer`; deferred access timeout → Unlikely Error).
/// - After `.outgoingAvailable(id)`, pull PDUs with `dequeueOutgoing(for:)` only as
///   fast as the link accepts them (that is the backpressure). Responses always
///   enter the queue; notifications/indications are bounded by
///   `configuration.maxQueuedUpdates`.
/// - `notify(characteristic:value:only:now:)` / `notifyMultiple(_:only:now:)` /
///   `setValue(characteristic:value:)` from the app (`notify` returns its result and outputs).
/// - `respond(to:result:now:)` answers `.deferredAccess` events: everything the server
///   cannot answer alone (the deferred-access hook, `DeferredAccess`): reads and writes of
///   `.deferred` values, and the commit a Write Request or Execute Write waits for before
///   it is acknowledged (`.persisted` values, a bonded client's state). Who answers
///   (an application, a disk) is the caller's business. `deferredAccessAvailable` says
///   whether reads and writes can be handed out now; `failDeferredAccesses(now:)` fails the
///   outstanding ones when their answerer leaves (commits stay).
/// Every call that can cause something returns `[ATTServerOutput]` to act on, in order.
///
/// Decisions where the specification leaves room (more with each part):
/// - Requests are processed strictly in order (§3.3.2). While a request waits for a
///   deferred access, every later PDU of that bearer (requests and commands alike, so
///   their effects keep their order) is held and processed after the answer; only a
///   Handle Value Confirmation is processed at once. Unexpected confirmations are ignored.
///   Otherwise a request that arrives while the bearer's answer to the previous one is still
///   in its queue (not pulled yet: the client cannot have seen it) is ignored, as Zephyr
///   does, so a client that pipelines requests cannot grow the queue without bound.
/// - PDUs longer than the bearer's ATT_MTU, or with a length their definition does not
///   allow, get Invalid PDU (requests) or are dropped (commands). Unknown request opcodes
///   and server-only opcodes (responses, notifications, indications) sent by the client get
///   Request Not Supported with handle 0x0000; unknown commands are dropped.
public struct ATTServer: Sendable {
    public internal(set) var database: GATTDatabase
    public var configuration: ATTServerConfiguration
    /// Whether reads and writes of `.deferred` values can be handed out as deferred accesses
    /// now (someone answers them). Commits are handed out regardless.
    public var deferredAccessAvailable = false

    /// One per connected central.
    var clients: [ConnectionID: ATTClient] = [:]
    /// Their ATT bearers and what flows on them.
    var bearers = ATTBearers()
    /// GATT-level accesses waiting for answers, and GATT-level subscribers.
    var gatt = GATTAccesses()
    /// The next deferred access's id (of a bearer's request or a GATT-level access).
    var nextRequestID: UInt64 = 1
    /// Index of the Client Supported Features characteristic.
    let clientFeaturesCharacteristic: CharacteristicIndex?
    /// Outputs of the call in progress.
    var outputs: [ATTServerOutput] = []

    public init(database: GATTDatabase, configuration: ATTServerConfiguration = ATTServerConfiguration()) {
        self.database = database
        self.configuration = configuration
        self.clientFeaturesCharacteristic = database.characteristics.firstIndex { $0.uuid == GATTUUID.clientSupportedFeatures }.map(CharacteristicIndex.init)
    }

    var rules: AttributeAccessRules { AttributeAccessRules(minimumKeySize: configuration.minimumKeySize, clientFeaturesCharacteristic: clientFeaturesCharacteristic) }
    var reads: ATTReadRequests { ATTReadRequests(rules: rules, deferredAccessAvailable: deferredAccessAvailable) }
    var writes: ATTWriteRequests { ATTWriteRequests(rules: rules, deferredAccessAvailable: deferredAccessAvailable, configuration) }
    var updates: ServerInitiatedUpdates { ServerInitiatedUpdates(configuration) }

    // MARK: Connections

    /// A central connected: its client state and its fixed ATT bearer (ATT_MTU 23).
    public mutating func connect(_ id: ConnectionID, security: SecurityLevel) {
        removeClient(id)
        clients[id] = ATTClient(security: security)
        bearers.connect(id)
    }

    /// Forgets the client and all its bearers (their outstanding deferred accesses become unknown).
    public mutating func disconnect(_ id: ConnectionID) -> [ATTServerOutput] {
        outputs = []
        removeClient(id)
        checkReady()
        return takeOutputs()
    }

    /// Forgets a client and every bearer of it; its GATT-level accesses are answered.
    mutating func removeClient(_ id: ConnectionID) {
        gatt.drop(of: id, into: &outputs)
        guard clients.removeValue(forKey: id) != nil else { return }
        bearers.disconnect(id)
    }

    public mutating func setSecurity(_ id: ConnectionID, _ level: SecurityLevel, keySize: Int? = nil) {
        clients[id]?.security = level
        clients[id]?.keySize = level.isEncrypted ? keySize : nil
    }

    /// The peer's CSRK (16 octets, little-endian as in the SMP Signing Information PDU)
    /// and the last Sign Counter accepted from it, if known.
    public mutating func setCSRK(_ id: ConnectionID, key: [UInt8], signCounter: UInt32? = nil) {
        guard key.count == 16 else { return }
        clients[id]?.csrk = key
        clients[id]?.lastSignCounter = signCounter
    }

    public var connections: [ConnectionID] { Array(clients.keys) }
    /// The ATT_MTU of the connection's fixed bearer.
    public func mtu(for id: ConnectionID) -> Int? { bearers.mtu(of: .fixed(id)) }
    /// The connection's CCCD bits for a characteristic (0x0001 notify, 0x0002 indicate).
    public func clientConfiguration(for id: ConnectionID, characteristic: CharacteristicIndex) -> UInt16? {
        guard let b = clients[id] else { return nil }
        return b.cccd[characteristic] ?? 0
    }
    /// Restores a bonded client's CCCD bits on reconnection (only bits the characteristic supports).
    public mutating func setClientConfiguration(for id: ConnectionID, characteristic: CharacteristicIndex, _ bits: UInt16) {
        guard database.contains(characteristic) else { return }
        clients[id]?.cccd[characteristic] = ATTClient.cccdBits(bits, allowedBy: database[characteristic].properties)
    }
    public func clientFeatures(for id: ConnectionID) -> [UInt8]? { clients[id]?.clientFeatures }
    /// The last Sign Counter accepted from the connection (to persist with the CSRK).
    public func signCounter(for id: ConnectionID) -> UInt32? { clients[id]?.lastSignCounter }

    // MARK: Values

    /// Sets a characteristic's stored value without notifying.
    public mutating func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool {
        guard database.valueUpdateRefusal(characteristic: characteristic, value: value, notifying: false) == nil else { return false }
        database.setValue(value, at: database[characteristic].valueHandle)
        return true
    }

    /// Sets a characteristic's value and queues it to every subscribed connection (or only
    /// `only`), on the bearer the characteristic's earlier updates to that client took
    /// (`ServerInitiatedUpdates`). `.busy` when any targeted subscriber's queue is full: then
    /// nothing changed, and `.event(.ready)` comes later. The outputs tell the transport which
    /// bearers have PDUs to pull; a characteristic with GATT-level subscribers also gets a
    /// `.gattUpdate` (`setGATTSubscribers`).
    public mutating func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        outputs = []
        let fanOut = updates
        let result = fanOut.notify(characteristic, value, only: only, now: now, database: &database, clients: &clients, bearers: &bearers, outputs: &outputs)
        guard gatt.hasSubscribers else { return (result, takeOutputs()) }
        return gatt.withUpdates((result, takeOutputs()), [(characteristic, value)], only: only, database: database)
    }

    /// Like `notify` for several characteristics at once, a client that asked for it getting
    /// them in one Multiple Handle Value Notification (`ServerInitiatedUpdates.notifyMultiple`).
    /// `.queued(n)` counts the clients reached (as `notify`). All or nothing.
    public mutating func notifyMultiple(_ updates: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        outputs = []
        let fanOut = self.updates
        let result = fanOut.notifyMultiple(updates, only: only, now: now, database: &database, clients: &clients, bearers: &bearers, outputs: &outputs)
        return gatt.withUpdates((result, takeOutputs()), updates, only: only, database: database)
    }

    // MARK: Receiving

    /// Handles one PDU from a bearer (unknown bearers are ignored). Each bearer has its own
    /// transaction (Vol 3 Part F §3.3.2): a request waiting on one bearer holds no other.
    public mutating func receive(_ pdu: [UInt8], from id: BearerID, now: Duration) -> [ATTServerOutput] {
        outputs = []
        guard let i = bearers.index(of: id), let first = pdu.first else { return [] }
        if first == ATTOpcode.handleValueConfirmation.rawValue {
            if pdu.count == 1 { handleConfirmation(id, now: now) }
            return takeOutputs()
        }
        if bearers.holdIfWaiting(pdu, at: i, max: configuration.maxHeldPDUs) { return takeOutputs() }
        // A request while this bearer's answer to the previous one still waits in its queue
        // breaks the one-transaction rule (§3.3.2): ignored, as Zephyr does, so a pipelining
        // client cannot grow the queue without bound (a 5-byte Read Blob costs up to ATT_MTU).
        if !ATTOpcode.isCommand(first), bearers.answerQueued(at: i) { return takeOutputs() }
        process(pdu, from: id, at: i, now: now)
        return takeOutputs()
    }

    /// Processes held PDUs while no request is pending.
    mutating func drainHeld(_ id: BearerID, now: Duration) {
        while let next = bearers.nextHeld(id), let i = bearers.index(of: id) {
            process(next, from: id, at: i, now: now)
        }
    }

    /// Processes one held or fresh PDU of the bearer at `i` (`id`'s; no request pending on it).
    private mutating func process(_ bytes: [UInt8], from id: BearerID, at i: ATTBearers.Index, now: Duration) {
        let mtu = bearers.mtu(at: i)
        let (decoded, rejection) = ATTRequestOutcome.decode(bytes, mtu: mtu)
        guard let pdu = decoded, let first = bytes.first else { return carryOut(rejection, id, now: now) }
        // Every bearer's client is connected (they come and go together).
        guard let ci = clients.index(forKey: id.connection) else { return }
        if !inClient(ci, { $0.awareness.isChangeAware }) {  // Vol 3 Part G §2.5.2.1
            let bearerCount = bearers.bearerCount(of: id.connection)
            switch clients.values[ci].changeAwareness(of: pdu, opcode: first, bearerCount: bearerCount) {
            case .process: break
            case .ignore: return
            case .outOfSync: return carryOut(.rejected(opcode: first, .databaseOutOfSync), id, now: now)
            }
        }
        switch pdu {
        case .exchangeMTURequest(let clientMTU): return exchangeMTU(clientMTU, id)
        case .handleValueConfirmation: return  // handled in receive
        default: break
        }
        let reads = self.reads
        if let outcome = reads.answer(pdu, mtu: mtu, in: database, client: &clients.values[ci]) { return carryOut(outcome, id, at: i, now: now) }
        let writes = self.writes
        let outcome = writes.answer(pdu, bytes, database: &database, client: &clients.values[ci], id.connection, outputs: &outputs)
            ?? .rejected(opcode: first, .requestNotSupported)  // a server-only PDU from the client: this server is no client
        carryOut(outcome, id, at: i, now: now)
    }

    /// Sends a request's answer on its bearer, or makes it wait for its deferred accesses
    /// (one id each, emitted as `.deferredAccess` in order; due by `commitTimeout` for a
    /// commit, else `deferredAccessTimeout`).
    /// (`i`: the bearer's index, when known.)
    mutating func carryOut(_ outcome: ATTRequestOutcome, _ id: BearerID, at i: ATTBearers.Index? = nil, now: Duration) {
        switch outcome {
        case .none: break
        case .respond(let pdu): respond(pdu.bytes, id, at: i)
        case .respondBytes(let bytes): respond(bytes, id, at: i)
        case .error(let op, let h, let e): sendError(op, h, e, to: id)
        case .rejected(let opcode, let e): send(.errorResponse(request: opcode, handle: AttributeHandle(0), code: e.rawValue), to: id)
        case .wait(let kind, let handle, let accesses):
            let waiting = accesses.map { (id: newRequestID(), handle: $0.0) }
            let timeout = if case .commit = kind { configuration.commitTimeout } else { configuration.deferredAccessTimeout }
            bearers.wait(id, for: PendingOperation(kind: kind, handle: handle, waiting: waiting, deadline: now + timeout))
            for (w, access) in zip(waiting, accesses) { emit(.deferredAccess(id: w.id, id.connection, access.1)) }
        }
    }

    private mutating func respond(_ bytes: [UInt8], _ id: BearerID, at i: ATTBearers.Index?) {
        if let i { bearers.enqueue(bytes, isUpdate: false, at: i, id, into: &outputs) } else { bearers.enqueue(bytes, isUpdate: false, to: id, into: &outputs) }
    }

    /// Reads or changes client `i` in place (`clients.values[i]` read through its getter
    /// copies the client, its tables and all).
    mutating func inClient<T>(_ i: Dictionary<ConnectionID, ATTClient>.Index, _ body: (inout ATTClient) -> T) -> T { body(&clients.values[i]) }

    mutating func newRequestID() -> PendingRequestID {
        defer { nextRequestID += 1 }
        return PendingRequestID(nextRequestID)
    }

    // MARK: Exchange MTU (§3.4.2), Handle Value Confirmation (§3.4.7.3)

    /// Exchange MTU on an Enhanced ATT bearer gets Request Not Supported. A second one is
    /// answered with the server MTU but changes nothing (the client "shall only send it once";
    /// Zephyr would re-apply it). A Client Rx MTU below 23 is treated as 23.
    mutating func exchangeMTU(_ clientMTU: UInt16, _ id: BearerID) {
        // Vol 3 Part G §4.3.1: Exchange MTU only on the unenhanced (fixed) bearer; an Enhanced
        // ATT bearer's ATT_MTU is its L2CAP channel's (Vol 3 Part F §3.2.8).
        if id.isEnhanced { return sendError(.exchangeMTURequest, 0, .requestNotSupported, to: id) }
        let serverMTU = max(23, min(517, configuration.maxMTU))
        send(.exchangeMTUResponse(mtu: UInt16(serverMTU)), to: id)
        if let mtu = bearers.exchangeMTU(id, clientMTU: clientMTU, serverMTU: serverMTU) { emit(.mtuExchanged(id.connection, mtu: mtu)) }
    }

    /// A confirmed Service Changed, unless another one waits on any bearer of the client or is
    /// outstanding on another, settles what the client was owed (Vol 3 Part G §2.5.2.1).
    mutating func handleConfirmation(_ id: BearerID, now: Duration) {
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        guard bearers.confirm(id, deadline: now + configuration.transactionTimeout, into: &outputs) == sc,
            !bearers.serviceChangedWaits(sc, besides: id)
        else { return }
        let count = bearers.bearerCount(of: id.connection)
        clients[id.connection]?.serviceChangedConfirmed(bearerCount: count)
    }

    // MARK: Outputs

    mutating func send(_ pdu: ATTPDU, to id: BearerID) { bearers.enqueue(pdu.bytes, isUpdate: false, to: id, into: &outputs) }

    mutating func sendError(_ request: ATTOpcode, _ handle: AttributeHandle, _ error: ATTError, to id: BearerID) {
        send(.error(request, handle, error), to: id)
    }

    mutating func emit(_ event: ATTServerEvent) { outputs.append(.event(event)) }

    mutating func checkReady() { bearers.checkReady(maxQueuedUpdates: configuration.maxQueuedUpdates, into: &outputs) }

    mutating func takeOutputs() -> [ATTServerOutput] {
        let o = outputs
        outputs = []
        return o
    }
}
