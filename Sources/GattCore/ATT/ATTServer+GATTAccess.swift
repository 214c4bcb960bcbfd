// GATT-level access for a back end that runs ATT itself (bluetoothd): `GATTAccess` in, a
// `.gattAnswer` out, with the rules of the PDU path (Read, Read Blob, Write Request, Write
// Command; Core Spec Vol 3 Part F §3.4.4.3–§3.4.5.3). The back end keeps the CCCDs and the
// prepare queue, and checks the link's security before it asks (bluetoothd enforces the
// flags gattd registered: `encrypt-read`...), so only the attribute's other rules are
// checked here; it tells the server which characteristics have subscribers.

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
        guard let a = database.attribute(at: h), clients[c] != nil else { return answerGATT(id, .failure(.invalidHandle)) }
        if let err = readError(a, security: .high, keySize: 16) { return answerGATT(id, .failure(err)) }  // security: the back end's
        if deferredAccessAvailable, case .characteristicValue(let ci) = a.role, database[ci].valueSource == .deferred {
            let rid = startGATTPending(.read, id, c, deadline: now + configuration.deferredAccessTimeout)
            return emit(.deferredAccess(id: rid, c, .read(characteristic: ci, offset: offset)))
        }
        let v = currentValue(a, of: c)
        guard offset <= v.count else { return answerGATT(id, .failure(.invalidOffset)) }
        answerGATT(id, .success(Array(v[offset...])))
    }

    private mutating func gattWrite(_ h: AttributeHandle, _ part: [UInt8], _ offset: Int, _ withResponse: Bool, _ id: GATTAccessID, _ c: ConnectionID, now: Duration) {
        guard var client = clients[c], let a = database.attribute(at: h) else { return answerGATT(id, .failure(.invalidHandle)) }
        client.security = .high  // the back end checked the link's security
        client.keySize = 16
        if let err = writeError(a, client, withResponse ? (offset > 0 ? .prepare : .request) : .command) { return answerGATT(id, .failure(err)) }
        if let ci = deferredCharacteristic(a) {
            guard offset + part.count <= a.maxLength else { return answerGATT(id, .failure(.invalidAttributeValueLength)) }
            guard deferredAccessAvailable else { return answerGATT(id, .failure(withResponse ? .writeRequestRejected : .unlikelyError)) }
            guard withResponse else {
                emit(.writeCommand(c, characteristic: ci, value: part))
                return answerGATT(id, .success([]))
            }
            let rid = startGATTPending(.write, id, c, deadline: now + configuration.deferredAccessTimeout)
            return emit(.deferredAccess(id: rid, c, .write(characteristic: ci, value: part, offset: offset)))
        }
        // A part at an offset replaces the value from there to its end (as Execute Write does).
        let current = currentValue(a, of: c)
        guard offset <= current.count else { return answerGATT(id, .failure(.invalidOffset)) }
        let v = offset == 0 ? part : Array(current[..<offset]) + part
        if let err = validateValue(a, v, client) { return answerGATT(id, .failure(err)) }
        if withResponse, case .characteristicValue(let ci) = a.role, database[ci].valueSource == .persisted {
            // Acknowledged only once durable: one commit, then the write (`respond`).
            let rid = startGATTPending(.commit(h, v), id, c, deadline: now + configuration.commitTimeout)
            return emit(.deferredAccess(id: rid, c, .commit(values: [PersistedValue(characteristic: ci, value: v)], clientState: nil)))
        }
        applyWrite(h, v, .fixed(c))
        answerGATT(id, .success([]))
    }

    private mutating func startGATTPending(_ kind: GATTPendingAccess.Kind, _ id: GATTAccessID, _ c: ConnectionID, deadline: Duration) -> PendingRequestID {
        let rid = PendingRequestID(nextRequestID)
        nextRequestID += 1
        gattAccesses[rid] = GATTPendingAccess(id: id, connection: c, kind: kind, deadline: deadline)
        return rid
    }

    mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>) {
        outputs.append(.gattAnswer(id, result))
    }

    /// `respond(to:result:now:)` for a GATT-level access; nil when `request` is not one.
    mutating func respondToGATTAccess(_ request: PendingRequestID, result: Result<[UInt8], ATTError>) -> [ATTServerOutput]? {
        guard let p = gattAccesses.removeValue(forKey: request) else { return nil }
        outputs = []
        switch (p.kind, result) {
        case (_, .failure(let err)): answerGATT(p.id, .failure(err))
        case (.read, .success(let v)): answerGATT(p.id, .success(v))
        case (.write, .success): answerGATT(p.id, .success([]))
        case (.commit(let h, let v), .success):
            applyWrite(h, v, .fixed(p.connection))
            answerGATT(p.id, .success([]))
        }
        return takeOutputs()
    }

    /// The central went (`removeClient`): its waiting accesses are answered Unlikely Error, so
    /// the back end forgets them too (a late answer of their deferred accesses is refused).
    mutating func dropGATTAccesses(of connection: ConnectionID) {
        for rid in gattAccesses.keys.sorted(by: { $0.rawValue < $1.rawValue }) where gattAccesses[rid]?.connection == connection {
            if let p = gattAccesses.removeValue(forKey: rid) { answerGATT(p.id, .failure(.unlikelyError)) }
        }
    }

    /// Fails the GATT-level accesses whose time is up (`commits`: theirs too) or whose
    /// central is gone, with Unlikely Error, each reported as `.requestTimedOut`.
    mutating func failGATTAccesses(where expired: (GATTPendingAccess) -> Bool) {
        for rid in gattAccesses.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let p = gattAccesses[rid], expired(p) else { continue }
            gattAccesses[rid] = nil
            emit(.requestTimedOut(id: rid))
            answerGATT(p.id, .failure(.unlikelyError))
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
