/// GATT-level access for a back end that runs ATT itself (bluetoothd): `GATTAccess` in, a
/// `.gattAnswer` out, with the rules of the PDU path (Read, Read Blob, Write Request, Write
/// Command; Core Spec Vol 3 Part F §3.4.4.3–§3.4.5.3). The back end keeps the CCCDs and the
/// prepare queue, and checks the link's security before it asks (bluetoothd enforces the
/// flags gattd registered: `encrypt-read`...), so only the attribute's other rules are
/// checked here; it tells the server which characteristics have subscribers. This keeps the
/// accesses waiting for a deferred access's answer, and those subscribers.
struct GATTAccesses: Sendable {
    /// Accesses waiting for their deferred access's answer.
    private var waiting: [PendingRequestID: GATTPendingAccess] = [:]
    /// Characteristics the back end has subscribers for (`setSubscribers`).
    private var subscribed: Set<CharacteristicIndex> = []

    /// What an access comes to: its answer now, or a deferred access to hand out first
    /// (`wait(_:for:)` with the id `ATTServer` gives it).
    enum Decision {
        case answer(Result<[UInt8], ATTError>)
        case deferred(GATTPendingAccess.Kind, DeferredAccess)
    }

    /// What access `access` of client `b` (`id`) comes to.
    static func decide(_ access: GATTAccess, writes: ATTWriteRequests, database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> Decision {
        switch access {
        case .read(let h, let offset):
            read(h, offset: offset, rules: writes.rules, deferredAccessAvailable: writes.deferredAccessAvailable, database: database, client: &b)
        case .write(let h, let v, let offset, let withResponse):
            write(h, v, offset: offset, withResponse: withResponse, writes: writes, database: &database, client: &b, id, outputs: &outputs)
        }
    }

    /// A read of client `b`'s view of the database (`deferredAccessAvailable`: a `.deferred`
    /// value is handed out).
    static func read(_ h: AttributeHandle, offset: Int, rules: AttributeAccessRules, deferredAccessAvailable: Bool, database: GATTDatabase, client b: inout ATTClient) -> Decision {
        guard let a = database.attribute(at: h) else { return .answer(.failure(.invalidHandle)) }
        if let err = rules.readError(a, security: .high, keySize: 16) { return .answer(.failure(err)) }  // security: the back end's
        if deferredAccessAvailable, let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
            return .deferred(.read, .read(characteristic: c, offset: offset))
        }
        let v = rules.currentValue(a, b)
        guard offset <= v.count else { return .answer(.failure(.invalidOffset)) }
        return .answer(.success(Array(v[offset...])))
    }

    /// A write by client `b` (`id`); a Write Command (`withResponse` false) is never refused
    /// with an error. A persisted value's write waits for its commit.
    static func write(
        _ h: AttributeHandle, _ part: [UInt8], offset: Int, withResponse: Bool, writes: ATTWriteRequests,
        database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]
    ) -> Decision {
        guard let a = database.attribute(at: h) else { return .answer(.failure(.invalidHandle)) }
        let rules = writes.rules
        var checked = b
        checked.security = .high  // the back end checked the link's security
        checked.keySize = 16
        if let err = rules.writeError(a, checked, withResponse ? (offset > 0 ? .prepare : .request) : .command, in: database) { return .answer(.failure(err)) }
        if let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
            guard offset + part.count <= a.maxLength else { return .answer(.failure(.invalidAttributeValueLength)) }
            guard writes.deferredAccessAvailable else { return .answer(.failure(withResponse ? .writeRequestRejected : .unlikelyError)) }
            guard withResponse else {
                outputs.append(.event(.writeCommand(id, characteristic: c, value: part)))
                return .answer(.success([]))
            }
            return .deferred(.write, .write(characteristic: c, value: part, offset: offset))
        }
        // A part at an offset replaces the value from there to its end (as Execute Write does).
        let current = rules.currentValue(a, b)
        guard offset <= current.count else { return .answer(.failure(.invalidOffset)) }
        let v = offset == 0 ? part : Array(current[..<offset]) + part
        if let err = rules.validateValue(a, v, checked, in: database) { return .answer(.failure(err)) }
        if withResponse, let c = AttributeAccessRules.persistedCharacteristic(a, in: database) {
            // Acknowledged only once durable: one commit, then the write (`respond`).
            return .deferred(.commit(h, v), .commit(values: [PersistedValue(characteristic: c, value: v)], clientState: nil))
        }
        rules.apply(h, v, database: &database, client: &b, id, into: &outputs)
        return .answer(.success([]))
    }

    /// The access now waits for deferred access `request`.
    mutating func wait(_ request: PendingRequestID, for access: GATTPendingAccess) { waiting[request] = access }

    func isWaiting(_ request: PendingRequestID) -> Bool { waiting[request] != nil }

    /// The answer to deferred access `request`, when it is one of these: the `.gattAnswer`,
    /// and a committed write to apply before it is sent.
    mutating func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> (answer: ATTServerOutput, write: (ConnectionID, AttributeHandle, [UInt8])?)? {
        guard let p = waiting.removeValue(forKey: request) else { return nil }
        switch (p.kind, result) {
        case (_, .failure(let err)): return (.gattAnswer(p.id, .failure(err)), nil)
        case (.read, .success(let v)): return (.gattAnswer(p.id, .success(v)), nil)
        case (.write, .success): return (.gattAnswer(p.id, .success([])), nil)
        case (.commit(let h, let v), .success): return (.gattAnswer(p.id, .success([])), (p.connection, h, v))
        }
    }

    /// The central went: its waiting accesses are answered Unlikely Error, so the back end
    /// forgets them too (a late answer of their deferred accesses is refused).
    mutating func drop(of connection: ConnectionID, into outputs: inout [ATTServerOutput]) {
        for rid in waiting.keys.sorted(by: { $0.rawValue < $1.rawValue }) where waiting[rid]?.connection == connection {
            if let p = waiting.removeValue(forKey: rid) { outputs.append(.gattAnswer(p.id, .failure(.unlikelyError))) }
        }
    }

    /// Fails the accesses `expired` picks with Unlikely Error, each reported as `.requestTimedOut`.
    mutating func fail(where expired: (GATTPendingAccess) -> Bool, into outputs: inout [ATTServerOutput]) {
        for rid in waiting.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let p = waiting[rid], expired(p) else { continue }
            waiting[rid] = nil
            outputs.append(.event(.requestTimedOut(id: rid)))
            outputs.append(.gattAnswer(p.id, .failure(.unlikelyError)))
        }
    }

    /// The earliest deadline of a waiting access.
    var nextDeadline: Duration? { waiting.values.map(\.deadline).min() }

    /// Whether the back end has subscribers for `characteristic` (it keeps their CCCDs: BlueZ
    /// says when the first subscribes and the last leaves).
    mutating func setSubscribers(_ characteristic: CharacteristicIndex, _ subscribed: Bool) {
        if subscribed { self.subscribed.insert(characteristic) } else { self.subscribed.remove(characteristic) }
    }

    var hasSubscribers: Bool { !subscribed.isEmpty }

    /// Adds the GATT-level updates to what `notify` queued: one per subscribed characteristic,
    /// counted as one more central reached. Not for `only` (the back end cannot target one).
    func withUpdates(
        _ done: (result: NotifyResult, outputs: [ATTServerOutput]), _ updates: [(characteristic: CharacteristicIndex, value: [UInt8])],
        only: ConnectionID?, database: GATTDatabase
    ) -> (result: NotifyResult, outputs: [ATTServerOutput]) {
        guard !subscribed.isEmpty, only == nil, case .queued(let n) = done.result else { return done }
        var outputs = done.outputs
        var reached = n
        for (c, v) in updates where subscribed.contains(c) {
            outputs.append(.gattUpdate(database[c].valueHandle, v))
            reached = n + 1
        }
        return (.queued(reached), outputs)
    }
}
