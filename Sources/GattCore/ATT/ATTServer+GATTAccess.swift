// GATT-level access for a back end that runs ATT itself (bluetoothd): `GATTAccess` in, a
// `.gattAnswer` out, with the rules of the PDU path (Read, Read Blob, Write Request, Write
// Command; Core Spec Vol 3 Part F §3.4.4.3–§3.4.5.3). The back end keeps the CCCDs and the
// prepare queue; it tells the server which characteristics have subscribers.

extension ATTServer {
    /// Answers or hands out one access of central `connection`: `.gattAnswer` now, or after
    /// the `.deferredAccess` it emits is answered (`respond(to:result:now:)`).
    public mutating func access(_ access: GATTAccess, id: GATTAccessID, from connection: ConnectionID, now: Duration) -> [ATTServerOutput] {
        outputs = []
        switch access {
        case .read(let h, let offset): gattRead(h, offset, id, connection, now: now)
        case .write(let h, let v, let offset, let withResponse): gattWrite(h, v, offset, withResponse, id, connection, now: now)
        }
        return takeOutputs()
    }

    private mutating func gattRead(_ h: AttributeHandle, _ offset: Int, _ id: GATTAccessID, _ c: ConnectionID, now: Duration) {
        guard let a = database.attribute(at: h), let client = clients[c] else { return answer(id, .failure(.invalidHandle)) }
        if let err = readError(a, security: client.security, keySize: client.keySize) { return answer(id, .failure(err)) }
        if deferredAccessAvailable, case .characteristicValue(let ci) = a.role, database[ci].valueSource == .deferred {
            let rid = startGATTPending(.read, id, c, deadline: now + configuration.deferredAccessTimeout)
            return emit(.deferredAccess(id: rid, c, .read(characteristic: ci, offset: offset)))
        }
        let v = currentValue(a, of: c)
        guard offset <= v.count else { return answer(id, .failure(.invalidOffset)) }
        answer(id, .success(Array(v[offset...])))
    }

    private mutating func gattWrite(_ h: AttributeHandle, _ part: [UInt8], _ offset: Int, _ withResponse: Bool, _ id: GATTAccessID, _ c: ConnectionID, now: Duration) {
        guard let a = database.attribute(at: h), let client = clients[c] else { return answer(id, .failure(.invalidHandle)) }
        if let err = writeError(a, client, withResponse ? (offset > 0 ? .prepare : .request) : .command) { return answer(id, .failure(err)) }
        if let ci = deferredCharacteristic(a) {
            guard offset + part.count <= a.maxLength else { return answer(id, .failure(.invalidAttributeValueLength)) }
            guard deferredAccessAvailable else { return answer(id, .failure(withResponse ? .writeRequestRejected : .unlikelyError)) }
            guard withResponse else {
                emit(.writeCommand(c, characteristic: ci, value: part))
                return answer(id, .success([]))
            }
            let rid = startGATTPending(.write, id, c, deadline: now + configuration.deferredAccessTimeout)
            return emit(.deferredAccess(id: rid, c, .write(characteristic: ci, value: part, offset: offset)))
        }
        // A part at an offset replaces the value from there to its end (as Execute Write does).
        let current = currentValue(a, of: c)
        guard offset <= current.count else { return answer(id, .failure(.invalidOffset)) }
        let v = offset == 0 ? part : Array(current[..<offset]) + part
        if let err = validateValue(a, v, client) { return answer(id, .failure(err)) }
        if withResponse, case .characteristicValue(let ci) = a.role, database[ci].valueSource == .persisted {
            // Acknowledged only once durable: one commit, then the write (`respond`).
            let rid = startGATTPending(.commit(h, v), id, c, deadline: now + configuration.commitTimeout)
            return emit(.deferredAccess(id: rid, c, .commit(values: [PersistedValue(characteristic: ci, value: v)], clientState: nil)))
        }
        applyWrite(h, v, .fixed(c))
        answer(id, .success([]))
    }

    private mutating func startGATTPending(_ kind: GATTPendingAccess.Kind, _ id: GATTAccessID, _ c: ConnectionID, deadline: Duration) -> PendingRequestID {
        let rid = PendingRequestID(nextRequestID)
        nextRequestID += 1
        gattAccesses[rid] = GATTPendingAccess(id: id, connection: c, kind: kind, deadline: deadline)
        return rid
    }

    private mutating func answer(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>) {
        outputs.append(.gattAnswer(id, result))
    }

    /// `respond(to:result:now:)` for a GATT-level access; nil when `request` is not one.
    mutating func respondToGATTAccess(_ request: PendingRequestID, result: Result<[UInt8], ATTError>) -> [ATTServerOutput]? {
        guard let p = gattAccesses.removeValue(forKey: request) else { return nil }
        outputs = []
        switch (p.kind, result) {
        case (_, .failure(let err)): answer(p.id, .failure(err))
        case (.read, .success(let v)): answer(p.id, .success(v))
        case (.write, .success): answer(p.id, .success([]))
        case (.commit(let h, let v), .success):
            applyWrite(h, v, .fixed(p.connection))
            answer(p.id, .success([]))
        }
        return takeOutputs()
    }

    /// Fails the GATT-level accesses whose time is up (`commits`: theirs too) or whose
    /// central is gone, with Unlikely Error, each reported as `.requestTimedOut`.
    mutating func failGATTAccesses(where expired: (GATTPendingAccess) -> Bool) {
        for rid in gattAccesses.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let p = gattAccesses[rid], expired(p) else { continue }
            gattAccesses[rid] = nil
            emit(.requestTimedOut(id: rid))
            answer(p.id, .failure(.unlikelyError))
        }
    }

    /// The earliest deadline of a waiting GATT-level access.
    var gattAccessDeadline: Duration? { gattAccesses.values.map(\.deadline).min() }

    /// Whether a back end that runs ATT itself has subscribers for `characteristic` (it keeps
    /// their CCCDs: BlueZ says when the first subscribes and the last leaves). `notify` then
    /// also emits `.gattUpdate` for it.
    public mutating func setGATTSubscribers(_ characteristic: CharacteristicIndex, _ subscribed: Bool) {
        if subscribed { gattSubscribed.insert(characteristic) } else { gattSubscribed.remove(characteristic) }
    }

    /// Adds the GATT-level updates to what `notify` queued: one per subscribed characteristic,
    /// counted as one more central reached. Not for `only` (the back end cannot target one).
    mutating func withGATTUpdates(
        _ done: (result: NotifyResult, outputs: [ATTServerOutput]), _ updates: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?
    ) -> (result: NotifyResult, outputs: [ATTServerOutput]) {
        guard !gattSubscribed.isEmpty, only == nil, case .queued(let n) = done.result else { return done }
        var outputs = done.outputs
        var reached = n
        for (c, v) in updates where gattSubscribed.contains(c) {
            outputs.append(.gattUpdate(database[c].valueHandle, v))
            reached = n + 1
        }
        return (.queued(reached), outputs)
    }
}
