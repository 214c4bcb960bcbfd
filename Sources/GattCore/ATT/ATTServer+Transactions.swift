// The server's calls that end or time out a transaction, on a bearer (deferred accesses,
// indications: Core Spec Vol 3 Part F §3.3.2, §3.3.3) or GATT-level (`GATTAccesses`).

extension ATTServer {
    /// The bearer a `.deferredAccess` waits on; nil once it was answered, timed out, or its
    /// bearer closed (an Enhanced ATT bearer's channel can close under it).
    public func bearer(waitingOn request: PendingRequestID) -> BearerID? { bearers.bearer(waitingOn: request) }

    /// Whether `request` is a waiting deferred access (of a bearer or a GATT-level access).
    public func isWaiting(_ request: PendingRequestID) -> Bool { bearers.bearer(waitingOn: request) != nil || gatt.isWaiting(request) }

    /// Answers a `.deferredAccess` event: a `.read` with the value from its offset, a
    /// `.write` or `.commit` with success (its bytes are ignored), any of them with an ATT
    /// error. Throws when the access is unknown, already answered, timed out, or its
    /// bearer is gone. The answer goes to the bearer the request came on.
    public mutating func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [ATTServerOutput] {
        outputs = []
        if let gattAnswer = gatt.respond(to: request, result: result) {
            if let (c, h, v) = gattAnswer.write, let ci = clients.index(forKey: c) {
                rules.apply(h, v, database: &database, client: &clients.values[ci], c, into: &outputs)
            }
            outputs.append(gattAnswer.answer)
            return takeOutputs()
        }
        guard let (id, p, handle) = bearers.answer(request) else { throw .unknownRequest }
        if case .execute = p.kind, case .success = result, !p.waiting.isEmpty { return takeOutputs() }
        bearers.endWait(id)
        if let ci = clients.index(forKey: id.connection) {
            let (writes, mtu) = (self.writes, bearers.mtu(of: id) ?? 23)
            let answer = p.answered(result, handle: handle, mtu: mtu, writes: writes, database: &database, client: &clients.values[ci], id.connection, outputs: &outputs)
            carryOut(answer, id, now: now)
        }
        drainHeld(id, now: now)
        return takeOutputs()
    }

    /// Answers every outstanding read or write deferred access with Unlikely Error at once
    /// (their answerer went away; commits stay); emits `.requestTimedOut` for each.
    public mutating func failDeferredAccesses(now: Duration) -> [ATTServerOutput] {
        outputs = []
        for id in bearers.waitingForReadsOrWrites { failPending(id, now: now) }
        gatt.fail(where: { if case .commit = $0.kind { false } else { true } }, into: &outputs)
        return takeOutputs()
    }

    mutating func failPending(_ id: BearerID, now: Duration) {
        guard let p = bearers.endWait(id) else { return }
        for w in p.waiting { emit(.requestTimedOut(id: w.id)) }
        sendError(p.requestOpcode, p.handle, .unlikelyError, to: id)
        drainHeld(id, now: now)
    }

    /// Answers or hands out one GATT-level access of central `connection`: `.gattAnswer` now,
    /// or after the `.deferredAccess` it emits is answered (`respond(to:result:now:)`).
    public mutating func access(_ access: GATTAccess, id: GATTAccessID, from connection: ConnectionID, now: Duration) -> [ATTServerOutput] {
        outputs = []
        guard let ci = clients.index(forKey: connection) else {
            outputs.append(.gattAnswer(id, .failure(.invalidHandle)))
            return takeOutputs()
        }
        let writes = self.writes
        let decision = GATTAccesses.decide(access, writes: writes, database: &database, client: &clients.values[ci], connection, outputs: &outputs)
        switch decision {
        case .answer(let result): outputs.append(.gattAnswer(id, result))
        case .deferred(let kind, let deferred):
            let rid = newRequestID()
            let timeout = if case .commit = kind { configuration.commitTimeout } else { configuration.deferredAccessTimeout }
            gatt.wait(rid, for: GATTPendingAccess(id: id, connection: connection, kind: kind, deadline: now + timeout))
            emit(.deferredAccess(id: rid, connection, deferred))
        }
        return takeOutputs()
    }

    /// Whether a back end that runs ATT itself has subscribers for `characteristic` (it keeps
    /// their CCCDs: BlueZ says when the first subscribes and the last leaves). `notify` then
    /// also emits `.gattUpdate` for it.
    public mutating func setGATTSubscribers(_ characteristic: CharacteristicIndex, _ subscribed: Bool) {
        gatt.setSubscribers(characteristic, subscribed)
    }

    // MARK: Timers

    /// The earliest time `tick(now:)` has something to do.
    public var nextDeadline: Duration? {
        var next = bearers.nextDeadline
        if let d = gatt.nextDeadline, next.map({ d < $0 }) ?? true { next = d }
        return next
    }

    /// Fires expired timers: an unconfirmed indication closes its bearer (§3.3.3: the fixed
    /// bearer's by closing the connection, an Enhanced ATT bearer's channel alone, what waited
    /// on it going to another); unanswered deferred accesses get Unlikely Error.
    public mutating func tick(now: Duration) -> [ATTServerOutput] {
        outputs = []
        for id in bearers.ids {
            if let c = bearers.expiredIndication(id, now: now) {
                emit(.indicationTimedOut(id.connection, characteristic: c))
                if id.isEnhanced {
                    // Not the indication that timed out, if the transport never took it.
                    bearers.close(id, dropIndication: true, deadline: now + configuration.transactionTimeout, database: database, into: &outputs)
                } else {
                    removeClient(id.connection)
                }
                outputs.append(.closeBearer(id, .transactionTimeout))
            } else if bearers.requestExpired(id, now: now) {
                failPending(id, now: now)
            }
        }
        gatt.fail(where: { $0.deadline <= now }, into: &outputs)
        checkReady()
        return takeOutputs()
    }
}
