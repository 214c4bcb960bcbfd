import DequeModule

/// The sans-I/O ATT server (Core Spec Vol 3 Part F) with GATT server rules
/// (Vol 3 Part G): one shared `GATTDatabase`, one `ATTClient` per connected central and one
/// `ATTBearer` per ATT bearer of it (the fixed ATT channel, and Enhanced ATT channels opened
/// with `openBearer(_:mtu:)`; every call taking a `ConnectionID` means the fixed bearer).
/// No I/O and no clocks: time comes in as `now` (a `Duration` since any fixed origin).
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
/// Decisions where the specification leaves room:
/// - Requests are processed strictly in order (§3.3.2). While a request waits for a
///   deferred access, every later PDU of that bearer (requests and commands alike, so
///   their effects keep their order) is held and processed after the answer; only a
///   Handle Value Confirmation is processed at once. Unexpected confirmations are ignored.
///   Otherwise a request that arrives while the bearer's answer to the previous one is still
///   in its queue (not pulled yet: the client cannot have seen it) is ignored, as Zephyr
///   does, so a client that pipelines requests cannot grow the queue without bound.
/// - Bearers (§3.2.11): each has its own transaction, ATT_MTU, queue and indication in
///   flight; a request waiting on one holds nothing on another. Exchange MTU on an Enhanced
///   ATT bearer gets Request Not Supported (Vol 3 Part G §4.3.1). A characteristic's
///   notifications and indications to a client all take the bearer its first one took (the
///   least loaded then; for an indication, one without an outstanding one first; ties to the
///   fixed bearer) until that bearer closes, so they arrive in the order they were submitted;
///   a closed bearer's queued updates move, in order, to another (`closeBearer`). An
///   unconfirmed indication on an Enhanced ATT bearer closes that channel only
///   (`.closeEnhancedBearer`).
/// - Per client, whatever bearer a PDU comes on: CCCDs, Client Supported Features, change
///   awareness, the signing counter and the prepare queue (§3.4.6). With more than one
///   bearer, only a Database Hash read followed by a request makes a change-unaware client
///   change-aware (Vol 3 Part G §2.5.2.1); a Service Changed confirmation then only settles
///   what it was owed.
/// - A second Exchange MTU is answered with the server MTU but changes nothing
///   (the client "shall only send it once"; Zephyr would re-apply it). A Client Rx MTU
///   below 23 is treated as 23.
/// - PDUs longer than the bearer's ATT_MTU, or with a length their definition does not
///   allow, get Invalid PDU (requests) or are dropped (commands). Unknown request opcodes
///   and server-only opcodes (responses, notifications, indications) sent by the client get
///   Request Not Supported with handle 0x0000; unknown commands are dropped.
/// - Encryption-required attributes on an unencrypted link give Insufficient Encryption
///   (0x0F). Insufficient Authentication (0x05) is never produced: no permission asks for
///   an authenticated (MITM) link.
/// - Attribute Not Long (0x0B) is never sent: the spec only allows it ("may") for
///   fixed-length values, values here are variable; Read Blob of a short value at offset 0
///   returns it (as Zephyr and BlueZ do). Offset == length returns an empty value,
///   offset > length gives Invalid Offset.
/// - CCCD writes: length ≠ 2 → 0x0D; reserved bits (above 0x0003) → Value Not Allowed
///   (0x13, as Zephyr); a bit the characteristic does not support → CCCD Improperly
///   Configured (0xFD, as BlueZ). Enabling notify/indicate of an `*_encryption_required`
///   characteristic on an unencrypted link → 0x0F.
/// - Client Supported Features: per client; clearing a set bit → Value Not Allowed.
/// - Writes at an offset replace the value from the offset to its end.
/// - Prepare queue: at most `maxPreparedWrites` entries and `maxPreparedBytes` value
///   octets (Prepare Queue Full). Several handles in one queue are allowed only when every
///   one is a value of a characteristic with `reliable_write`; otherwise the Prepare Write
///   that adds the second handle gets Write Not Permitted (0x03). Offsets and lengths are
///   checked at Execute Write, all-or-nothing; the queue is cleared after any Execute.
/// - `.deferred` values: with `deferredAccessAvailable == false`, reads return the stored
///   value and writes get Write Request Rejected (0xFC); Write Commands are dropped.
///   Prepared writes of a deferred value must be contiguous and become one
///   `DeferredAccess.write` at Execute Write. Read By Type / Read Multiple / Find By Type
///   Value use the stored value of deferred characteristics (they are not handed out).
/// - A Write Request or Execute Write that changes `.persisted` values or a bonded
///   client's state is answered after one `DeferredAccess.commit` carrying all of it; Write
///   Commands and Signed Writes are never held (stored at once, best effort).
public struct ATTServer: Sendable {
    public internal(set) var database: GATTDatabase
    public var configuration: ATTServerConfiguration
    /// Whether reads and writes of `.deferred` values can be handed out as deferred accesses
    /// now (someone answers them). Commits are handed out regardless.
    public var deferredAccessAvailable = false

    /// One per connected central.
    var clients: [ConnectionID: ATTClient] = [:]
    /// One per ATT bearer of those clients (`ATTClient.channels` lists a client's).
    var bearers: [BearerID: ATTBearer] = [:]
    var pendingRequests: [PendingRequestID: BearerID] = [:]
    var nextRequestID: UInt64 = 1
    /// Clients whose full queues made `notify` return `.busy`, until they have room.
    var busyConnections: Set<ConnectionID> = []
    var readyOwed = false
    /// Index of the Client Supported Features characteristic.
    let clientFeaturesCharacteristic: CharacteristicIndex?
    /// GATT-level accesses waiting for a deferred access's answer (`ATTServer+GATTAccess`).
    var gattAccesses: [PendingRequestID: GATTPendingAccess] = [:]
    /// Characteristics a back end that runs ATT itself has subscribers for (`setGATTSubscribers`).
    var gattSubscribed: Set<CharacteristicIndex> = []

    /// Outputs of the call in progress.
    var outputs: [ATTServerOutput] = []

    public init(database: GATTDatabase, configuration: ATTServerConfiguration = ATTServerConfiguration()) {
        self.database = database
        self.configuration = configuration
        self.clientFeaturesCharacteristic = database.characteristics.firstIndex { $0.uuid == GATTUUID.clientSupportedFeatures }.map(CharacteristicIndex.init)
    }

    // MARK: Connections

    /// A central connected: its client state and its fixed ATT bearer (ATT_MTU 23).
    public mutating func connect(_ id: ConnectionID, security: SecurityLevel) {
        removeClient(id)
        clients[id] = ATTClient(security: security)
        bearers[.fixed(id)] = ATTBearer()
    }

    /// Forgets the client and all its bearers (their outstanding deferred accesses become unknown).
    public mutating func disconnect(_ id: ConnectionID) -> [ATTServerOutput] {
        outputs = []
        removeClient(id)
        checkReady()
        return takeOutputs()
    }

    public mutating func setSecurity(_ id: ConnectionID, _ level: SecurityLevel, keySize: Int? = nil) {
        clients[id]?.security = level
        clients[id]?.keySize = level.isEncrypted ? keySize : nil
    }

    /// Vol 3 Part C §10.3.1: an attribute that needs authentication (`authenticated`) or
    /// encryption answers Insufficient Authentication (0x05) without an authenticated key,
    /// Insufficient Encryption (0x0F) on an unencrypted link, and Insufficient Encryption Key
    /// Size (0x0C) when the link's key is shorter than `minimumKeySize`.
    func securityError(_ b: ATTClient, authenticated: Bool) -> ATTError? {
        Self.securityError(b.security, keySize: b.keySize, authenticated: authenticated, minimumKeySize: configuration.minimumKeySize)
    }

    static func securityError(_ security: SecurityLevel, keySize: Int?, authenticated: Bool, minimumKeySize: Int) -> ATTError? {
        if authenticated, !security.isAuthenticated { return .insufficientAuthentication }
        if !security.isEncrypted { return .insufficientEncryption }
        if let k = keySize, k < minimumKeySize { return .encryptionKeySizeTooShort }
        return nil
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
    public func mtu(for id: ConnectionID) -> Int? { bearers[.fixed(id)]?.mtu }
    /// The connection's CCCD bits for a characteristic (0x0001 notify, 0x0002 indicate).
    public func clientConfiguration(for id: ConnectionID, characteristic: CharacteristicIndex) -> UInt16? {
        guard let b = clients[id] else { return nil }
        return b.cccd[characteristic] ?? 0
    }
    /// Restores a bonded client's CCCD bits on reconnection (only bits the characteristic supports).
    public mutating func setClientConfiguration(for id: ConnectionID, characteristic: CharacteristicIndex, _ bits: UInt16) {
        guard database.contains(characteristic) else { return }
        let p = database[characteristic].properties
        let allowed: UInt16 = (p.canNotify ? 0x0001 : 0) | (p.canIndicate ? 0x0002 : 0)
        clients[id]?.cccd[characteristic] = bits & allowed
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

    // MARK: Receiving

    /// Handles one PDU from a bearer (unknown bearers are ignored). Each bearer has its own
    /// transaction (Vol 3 Part F §3.3.2): a request waiting on one bearer holds no other.
    public mutating func receive(_ pdu: [UInt8], from id: BearerID, now: Duration) -> [ATTServerOutput] {
        outputs = []
        guard let i = bearers.index(forKey: id), let first = pdu.first else { return [] }
        if first == ATTOpcode.handleValueConfirmation.rawValue {
            if pdu.count == 1 { handleConfirmation(id, now: now) }
            return takeOutputs()
        }
        let maxHeld = configuration.maxHeldPDUs
        let held = inBearer(i) { b in
            guard b.pending != nil else { return false }
            if b.held.count < maxHeld { b.held.append(pdu) }
            return true
        }
        if held { return takeOutputs() }
        // A request while this bearer's answer to the previous one still waits in its queue
        // breaks the one-transaction rule (§3.3.2): ignored, as Zephyr does, so a pipelining
        // client cannot grow the queue without bound (a 5-byte Read Blob costs up to ATT_MTU).
        if !ATTOpcode.isCommand(first), inBearer(i, { $0.outgoing.count > $0.queuedUpdates }) { return takeOutputs() }
        process(pdu, from: id, at: i, now: now)
        return takeOutputs()
    }

    /// Processes one held or fresh PDU (no request pending on the bearer).
    mutating func process(_ bytes: [UInt8], from id: BearerID, now: Duration) {
        guard let i = bearers.index(forKey: id) else { return }
        process(bytes, from: id, at: i, now: now)
    }

    /// `process(_:from:now:)` of the bearer at `i` (`id`'s).
    private mutating func process(_ bytes: [UInt8], from id: BearerID, at i: Dictionary<BearerID, ATTBearer>.Index, now: Duration) {
        guard let first = bytes.first else { return }
        let isCommand = ATTOpcode.isCommand(first)
        if bytes.count > inBearer(i, { $0.mtu }) {
            if !isCommand { sendError(first, 0, .invalidPDU, to: id) }
            return
        }
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(decoding: bytes)
        } catch {
            switch error {
            case .empty: break
            case .unknownOpcode:
                if !isCommand { sendError(first, 0, .requestNotSupported, to: id) }
            case .invalidLength(let op):
                if op.isClientRequest {
                    sendError(first, 0, .invalidPDU, to: id)
                } else if !isCommand && op != .handleValueConfirmation {
                    sendError(first, 0, .requestNotSupported, to: id)
                }
            }
            return
        }
        guard changeAwarenessAllows(pdu, opcode: first, id) else { return }  // Vol 3 Part G §2.5.2.1
        switch pdu {
        case .exchangeMTURequest(let mtu): exchangeMTU(mtu, id)
        case .findInformationRequest(let s, let e): findInformation(s, e, id)
        case .findByTypeValueRequest(let s, let e, let type, let value): findByTypeValue(s, e, type, value, id)
        case .readByTypeRequest(let s, let e, let type): readByType(s, e, type, id)
        case .readRequest(let h): read(.readRequest, h, offset: 0, id, at: i, now: now)
        case .readBlobRequest(let h, let offset): read(.readBlobRequest, h, offset: Int(offset), id, at: i, now: now)
        case .readMultipleRequest(let handles): readMultiple(handles, variable: false, id)
        case .readMultipleVariableRequest(let handles): readMultiple(handles, variable: true, id)
        case .readByGroupTypeRequest(let s, let e, let type): readByGroupType(s, e, type, id)
        case .writeRequest(let h, let value): writeRequest(h, value, id, now: now)
        case .writeCommand(let h, let value): writeCommand(h, value, signed: false, id)
        case .signedWriteCommand(let h, let value, let signature):
            if verifySignedWrite(bytes, signature: signature, id) { writeCommand(h, value, signed: true, id) }
        case .prepareWriteRequest(let h, let offset, let value): prepareWrite(h, Int(offset), value, id)
        case .executeWriteRequest(let flags): executeWrite(flags, id, now: now)
        case .handleValueConfirmation:
            break  // handled in receive
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
            .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse, .readByGroupTypeResponse,
            .writeResponse, .prepareWriteResponse, .executeWriteResponse, .readMultipleVariableResponse,
            .handleValueNotification, .handleValueIndication, .multipleHandleValueNotification:
            // A server-only PDU from the client: this server is no client.
            sendError(first, 0, .requestNotSupported, to: id)
        }
    }

    /// Processes held PDUs while no request is pending.
    mutating func drainHeld(_ id: BearerID, now: Duration) {
        while bearers[id]?.pending == nil, let next = bearers[id]?.held.popFirst() {
            process(next, from: id, now: now)
        }
    }

    // MARK: Exchange MTU (§3.4.2)

    mutating func exchangeMTU(_ clientMTU: UInt16, _ id: BearerID) {
        // Vol 3 Part G §4.3.1: Exchange MTU only on the unenhanced (fixed) bearer; an Enhanced
        // ATT bearer's ATT_MTU is its L2CAP channel's (Vol 3 Part F §3.2.8).
        if id.isEnhanced { return sendError(.exchangeMTURequest, 0, .requestNotSupported, to: id) }
        let serverMTU = max(23, min(517, configuration.maxMTU))
        send(.exchangeMTUResponse(mtu: UInt16(serverMTU)), to: id)
        guard let b = bearers[id], !b.mtuExchanged else { return }
        let mtu = min(max(23, Int(clientMTU)), serverMTU)
        bearers[id]?.mtu = mtu
        bearers[id]?.mtuExchanged = true
        emit(.mtuExchanged(id.connection, mtu: mtu))
    }
}
