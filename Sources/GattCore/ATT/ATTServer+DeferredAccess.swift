// The deferred-access hook: a read or write the server cannot answer alone is handed out
// (`ATTServerEvent.deferredAccess`) and answered later (`respond(to:result:now:)`); the
// request waits meanwhile and its bearer's later PDUs are held (Core Spec Vol 3 Part F
// §3.3.2: one request at a time, answered in order).

extension ATTServer {
    /// Registers a request waiting for deferred accesses, one per handle, and returns their
    /// ids; its deadline is `commitTimeout` for a commit, else `deferredAccessTimeout`.
    mutating func startPending(_ kind: PendingOperation.Kind, handle: AttributeHandle, waiting handles: [AttributeHandle], _ id: BearerID, now: Duration) -> [PendingRequestID] {
        var waiting: [(id: PendingRequestID, handle: AttributeHandle)] = []
        for h in handles {
            let rid = PendingRequestID(nextRequestID)
            nextRequestID += 1
            pendingRequests[rid] = id
            waiting.append((rid, h))
        }
        let timeout: Duration
        if case .commit = kind { timeout = configuration.commitTimeout } else { timeout = configuration.deferredAccessTimeout }
        bearers[id]?.pending = PendingOperation(kind: kind, handle: handle, waiting: waiting, deadline: now + timeout)
        return waiting.map(\.id)
    }

    /// The bearer a `.deferredAccess` waits on; nil once it was answered, timed out, or its
    /// bearer closed (an Enhanced ATT bearer's channel can close under it).
    public func bearer(waitingOn request: PendingRequestID) -> BearerID? { pendingRequests[request] }

    /// Whether `request` is a waiting deferred access (of a bearer or a GATT-level access).
    public func isWaiting(_ request: PendingRequestID) -> Bool { pendingRequests[request] != nil || gattAccesses[request] != nil }

    /// Answers a `.deferredAccess` event: a `.read` with the value from its offset, a
    /// `.write` or `.commit` with success (its bytes are ignored), any of them with an ATT
    /// error. Throws when the access is unknown, already answered, timed out, or its
    /// bearer is gone. The answer goes to the bearer the request came on.
    public mutating func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [ATTServerOutput] {
        if let answered = respondToGATTAccess(request, result: result) { return answered }
        outputs = []
        guard let id = pendingRequests.removeValue(forKey: request), var p = bearers[id]?.pending,
            let index = p.waiting.firstIndex(where: { $0.id == request })
        else { throw .unknownRequest }
        let handle = p.waiting[index].handle
        p.waiting.remove(at: index)
        switch (p.kind, result) {
        case (_, .failure(let err)):
            for w in p.waiting { pendingRequests[w.id] = nil }
            bearers[id]?.pending = nil
            sendError(p.requestOpcode, handle, err, to: id)
        case (.read(let op), .success(let value)):
            bearers[id]?.pending = nil
            let part = Array(value.prefix((bearers[id]?.mtu ?? 23) - 1))
            send(op == .readRequest ? .readResponse(value: part) : .readBlobResponse(value: part), to: id)
        case (.write, .success):
            bearers[id]?.pending = nil
            send(.writeResponse, to: id)
        case (.execute(let storedWrites), .success):
            if !p.waiting.isEmpty {
                bearers[id]?.pending = p
                return takeOutputs()
            }
            bearers[id]?.pending = nil
            finishWrites(storedWrites, .executeWriteRequest, id, now: now)  // may wait for a commit
        case (.commit(let op, let writes), .success):
            bearers[id]?.pending = nil
            for (h, v) in writes { applyWrite(h, v, id) }
            send(op == .writeRequest ? .writeResponse : .executeWriteResponse, to: id)
        }
        drainHeld(id, now: now)
        return takeOutputs()
    }

    /// Answers every outstanding read or write deferred access with Unlikely Error at once
    /// (their answerer went away; commits stay); emits `.requestTimedOut` for each.
    public mutating func failDeferredAccesses(now: Duration) -> [ATTServerOutput] {
        outputs = []
        for id in bearers.keys.sorted() where bearers[id]?.pending?.isCommit == false {
            failPending(id, now: now)
        }
        failGATTAccesses { if case .commit = $0.kind { false } else { true } }
        return takeOutputs()
    }

    mutating func failPending(_ id: BearerID, now: Duration) {
        guard let p = bearers[id]?.pending else { return }
        for w in p.waiting {
            pendingRequests[w.id] = nil
            emit(.requestTimedOut(id: w.id))
        }
        bearers[id]?.pending = nil
        sendError(p.requestOpcode, p.handle, .unlikelyError, to: id)
        drainHeld(id, now: now)
    }
}

extension PendingOperation {
    var requestOpcode: ATTOpcode {
        switch kind {
        case .read(let op): op
        case .write: .writeRequest
        case .execute: .executeWriteRequest
        case .commit(let op, _): op
        }
    }
}
