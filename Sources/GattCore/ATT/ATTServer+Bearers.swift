// ATT bearers of a client (Core Spec Vol 3 Part F §3.2.11): opening and closing Enhanced ATT
// bearers, each bearer's outgoing queue, which bearer carries a server-initiated update, and
// the timers of each bearer's transactions (§3.3.3).

extension ATTServer {
    // MARK: Bearers

    /// An Enhanced ATT bearer of a connected client opened: an L2CAP Enhanced Credit Based
    /// channel on PSM 0x0027 (Vol 3 Part F §3.2.11). Its ATT_MTU is the channel's MTU (the
    /// smaller of both sides' MTUs, §3.2.8); no Exchange MTU happens on it. False (nothing
    /// changed) for an unknown client, the fixed channel, or a bearer already open.
    @discardableResult
    public mutating func openBearer(_ id: BearerID, mtu: Int) -> Bool {
        guard id.isEnhanced, clients[id.connection] != nil, bearers[id] == nil else { return false }
        bearers[id] = ATTBearer(mtu: max(23, mtu))
        clients[id.connection]?.channels.append(id.channel)
        return true
    }

    /// An Enhanced ATT bearer's channel closed: the bearer is forgotten (its outstanding
    /// deferred accesses become unknown, its queued responses are dropped); an indication
    /// the transport took and the client did not confirm is reported (`.indicationUnconfirmed`,
    /// not re-sent: the client may have received it); the notifications and indications still
    /// queued or waiting on it move, in order, to another bearer of the client
    /// (`moveUpdates`); the client and its other bearers stay. The fixed bearer closes with
    /// its connection: for it this is `disconnect`.
    public mutating func closeBearer(_ id: BearerID, now: Duration) -> [ATTServerOutput] {
        guard id.isEnhanced else { return disconnect(id.connection) }
        outputs = []
        if let closed = removeBearer(id) {
            reportUnconfirmed(closed, of: id.connection)
            moveUpdates(of: closed, from: id, now: now)
        }
        checkReady()
        return takeOutputs()
    }

    /// An Enhanced ATT bearer's channel was reconfigured to a new MTU (L2CAP Credit Based
    /// Reconfigure, Vol 3 Part A §4.27: an MTU may only grow): its ATT_MTU follows. False
    /// (nothing changed) for an unknown or fixed bearer, or a smaller MTU.
    @discardableResult
    public mutating func reconfigureBearer(_ id: BearerID, mtu: Int) -> Bool {
        guard id.isEnhanced, let old = bearers[id]?.mtu, mtu >= old else { return false }
        bearers[id]?.mtu = mtu
        return true
    }

    /// The connection's bearers, the fixed one first (empty for an unknown connection).
    public func bearers(of id: ConnectionID) -> [BearerID] {
        clients[id]?.channels.map { BearerID(id, channel: $0) } ?? []
    }

    /// A bearer's ATT_MTU.
    public func mtu(for id: BearerID) -> Int? { bearers[id]?.mtu }

    /// The bearer that carries characteristic `c`'s next notification or indication to a
    /// client: the one its earlier updates took (`ATTClient.updateChannels`), so that they
    /// arrive in the order they were submitted whatever the bearers' credits and queues (a PDU
    /// the transport took may still wait for credits there); for a characteristic without one,
    /// `freeUpdateBearer`. The caller pins the choice (`pin`) when it queues the update.
    mutating func updateBearer(of id: ConnectionID, characteristic c: CharacteristicIndex, indication: Bool) -> Dictionary<BearerID, ATTBearer>.Index? {
        if let ch = clients[id]?.updateChannels[c], let i = bearers.index(forKey: BearerID(id, channel: ch)) { return i }
        return freeUpdateBearer(of: id, indication: indication)
    }

    /// The least loaded of a client's bearers (fewest updates queued; for an indication, one
    /// with none outstanding first, so it goes out now), ties to the earliest opened, the fixed
    /// bearer first: where a characteristic's first update goes (and a closed bearer's updates).
    mutating func freeUpdateBearer(of id: ConnectionID, indication: Bool) -> Dictionary<BearerID, ATTBearer>.Index? {
        guard let channels = clients[id]?.channels else { return nil }
        if channels.count == 1 { return bearers.index(forKey: BearerID(id, channel: channels[0])) }
        var best: (index: Dictionary<BearerID, ATTBearer>.Index, busy: Int, load: Int)?
        for ch in channels {
            guard let i = bearers.index(forKey: BearerID(id, channel: ch)) else { continue }
            let (busy, load) = inBearer(i) { (indication && $0.outstandingIndication != nil ? 1 : 0, $0.updateCount) }
            if let b = best, (b.busy, b.load) <= (busy, load) { continue }
            best = (i, busy, load)
        }
        return best?.index
    }

    /// Keeps characteristic `c`'s updates to the client on `bearer` from now on.
    mutating func pin(_ c: CharacteristicIndex, to bearer: BearerID) {
        guard let i = clients.index(forKey: bearer.connection) else { return }
        if clients.values[i].updateChannels[c] != bearer.channel { clients.values[i].updateChannels[c] = bearer.channel }
    }

    /// The updates a closed Enhanced ATT bearer still held (queued, or waiting behind its
    /// outstanding indication) go to one other bearer of the client, in the order they were
    /// queued, each cut to that bearer's ATT_MTU (a Multiple Handle Value Notification that
    /// no longer fits becomes one notification per value), and the characteristics that took
    /// the closed bearer take that one. Without such updates they choose afresh. (An update the
    /// transport had already taken from the closed bearer is gone with its channel.)
    mutating func moveUpdates(of closed: ATTBearer, from id: BearerID, now: Duration) {
        guard let ci = clients.index(forKey: id.connection) else { return }
        let moved = clients.values[ci].updateChannels.filter { $0.value == id.channel }.map(\.key)
        for c in moved { clients.values[ci].updateChannels[c] = nil }
        let pdus = closed.outgoing.filter(\.isUpdate).map(\.bytes) + closed.waitingIndications.map(\.bytes)
        let anyIndication = pdus.contains { $0.first == ATTOpcode.handleValueIndication.rawValue }
        guard !pdus.isEmpty, let ti = freeUpdateBearer(of: id.connection, indication: anyIndication) else { return }
        let target = bearers.keys[ti]
        for c in moved { pin(c, to: target) }
        let mtu = inBearer(ti) { $0.mtu }
        let deadline = now + configuration.transactionTimeout
        for pdu in pdus {
            for part in Self.fit(pdu, mtu: mtu) {
                if part.first == ATTOpcode.handleValueIndication.rawValue {
                    let c = characteristic(ofIndication: part)
                    guard inBearer(ti, { $0.outstandingIndication != nil }) else {
                        inBearer(ti) { $0.outstandingIndication = (c, deadline) }
                        enqueue(part, isUpdate: true, to: target)
                        continue
                    }
                    inBearer(ti) { $0.waitingIndications.append(.init(characteristic: c, bytes: part)) }
                } else {
                    enqueue(part, isUpdate: true, to: target)
                }
            }
        }
    }

    /// Emits `.indicationUnconfirmed` when the closed bearer's outstanding indication was
    /// taken by the transport (sent, or about to be): no confirmation can come for it on
    /// another bearer (Vol 3 Part F §3.3.2: a confirmation answers its own bearer's
    /// indication). One still in its queue moves with the other updates instead.
    private mutating func reportUnconfirmed(_ closed: ATTBearer, of id: ConnectionID) {
        guard let o = closed.outstandingIndication,
            !closed.outgoing.contains(where: { $0.isUpdate && $0.bytes.first == ATTOpcode.handleValueIndication.rawValue })
        else { return }
        emit(.indicationUnconfirmed(id, characteristic: o.characteristic))
    }

    /// The characteristic whose value handle an indication names.
    private func characteristic(ofIndication pdu: [UInt8]) -> CharacteristicIndex {
        let handle = AttributeHandle(UInt16(pdu[1]) | UInt16(pdu[2]) << 8)
        if case .characteristicValue(let c)? = database.attribute(at: handle)?.role { return c }
        return GATTDatabase.BuiltIn.serviceChanged.index
    }

    /// An update PDU made for another bearer, for one of ATT_MTU `mtu`: a notification or
    /// indication with its value cut to ATT_MTU-3 (Vol 3 Part F §3.4.7.1), a Multiple Handle
    /// Value Notification as it is when it fits, else one notification per value.
    static func fit(_ pdu: [UInt8], mtu: Int) -> [[UInt8]] {
        guard pdu.count > mtu else { return [pdu] }
        guard pdu.first == ATTOpcode.multipleHandleValueNotification.rawValue,
            case .multipleHandleValueNotification(let values)? = try? ATTPDU(decoding: pdu)
        else { return [Array(pdu.prefix(mtu))] }
        return values.map { ATTPDU.handleValueNotification(handle: $0.handle, value: Array($0.value.prefix(mtu - 3))).bytes }
    }

    // MARK: Outgoing queue

    public func hasOutgoing(_ id: BearerID) -> Bool { !(bearers[id]?.outgoing.isEmpty ?? true) }

    /// The next PDU to transmit on a bearer, with outputs that pulling it caused (`.ready`
    /// once every queue that made `notify` busy has room).
    public mutating func dequeueOutgoing(for id: BearerID) -> (pdu: [UInt8], outputs: [ATTServerOutput])? {
        outputs = []
        // In place: a copy of the bearer would copy its queue for every PDU.
        guard let i = bearers.index(forKey: id), let next = bearers.values[i].outgoing.popFirst() else { return nil }
        if next.isUpdate { bearers.values[i].queuedUpdates -= 1 }
        checkReady()
        return (next.bytes, takeOutputs())
    }

    mutating func send(_ pdu: ATTPDU, to id: BearerID) {
        enqueue(pdu.bytes, isUpdate: false, to: id)
    }

    mutating func sendError(_ request: UInt8, _ handle: UInt16, _ error: ATTError, to id: BearerID) {
        send(.errorResponse(request: request, handle: AttributeHandle(handle), code: error.rawValue), to: id)
    }

    mutating func sendError(_ request: ATTOpcode, _ handle: AttributeHandle, _ error: ATTError, to id: BearerID) {
        send(.error(request, handle, error), to: id)
    }

    mutating func enqueue(_ bytes: [UInt8], isUpdate: Bool, to id: BearerID) {
        guard let i = bearers.index(forKey: id) else { return }
        enqueue(bytes, isUpdate: isUpdate, at: i, id)
    }

    /// `enqueue(_:isUpdate:to:)` when the bearer's index is known (`id` is its key).
    mutating func enqueue(_ bytes: [UInt8], isUpdate: Bool, at i: Dictionary<BearerID, ATTBearer>.Index, _ id: BearerID) {
        bearers.values[i].outgoing.append(.init(bytes: bytes, isUpdate: isUpdate))
        if isUpdate { bearers.values[i].queuedUpdates += 1 }
        let available = ATTServerOutput.outgoingAvailable(id)
        if !outputs.contains(available) { outputs.append(available) }
    }

    /// Reads or changes the bearer at `i` in place: `bearers.values[i]` or `bearers[id]`
    /// read through their getters copy the whole bearer (its queues and tables).
    mutating func inBearer<T>(_ i: Dictionary<BearerID, ATTBearer>.Index, _ body: (inout ATTBearer) -> T) -> T {
        body(&bearers.values[i])
    }

    mutating func emit(_ event: ATTServerEvent) { outputs.append(.event(event)) }

    mutating func takeOutputs() -> [ATTServerOutput] {
        let o = outputs
        outputs = []
        return o
    }

    /// Forgets a client and every bearer of it.
    mutating func removeClient(_ id: ConnectionID) {
        dropGATTAccesses(of: id)
        guard let c = clients.removeValue(forKey: id) else { return }
        for ch in c.channels { removeBearer(BearerID(id, channel: ch)) }
    }

    /// Forgets one bearer (its outstanding deferred accesses become unknown) and returns it.
    @discardableResult
    mutating func removeBearer(_ id: BearerID) -> ATTBearer? {
        clients[id.connection]?.channels.removeAll { $0 == id.channel }
        guard let b = bearers.removeValue(forKey: id) else { return nil }
        for w in b.pending?.waiting ?? [] { pendingRequests[w.id] = nil }
        return b
    }

    /// Emits `.ready` when `notify` returned `.busy` and every client that was full has a
    /// bearer at most half full: a low-water mark, so that a waiting burst resumes with room
    /// for many notifications (one event-loop turn, one write), not one per completed packet.
    mutating func checkReady() {
        guard readyOwed else { return }
        let half = configuration.maxQueuedUpdates / 2
        busyConnections = busyConnections.filter { id in
            guard let channels = clients[id]?.channels else { return false }
            return !channels.contains { (bearers[BearerID(id, channel: $0)]?.updateCount ?? .max) <= half }
        }
        if busyConnections.isEmpty {
            readyOwed = false
            emit(.ready)
        }
    }

    // MARK: Timers

    /// The earliest time `tick(now:)` has something to do.
    public var nextDeadline: Duration? {
        // By index, reading the two fields in place: `for b in bearers.values` copies each
        // bearer whole (queues and all), and the daemon asks after every event.
        var next: Duration?
        for i in bearers.values.indices {
            if let d = bearers.values[i].outstandingIndication?.deadline, next.map({ d < $0 }) ?? true { next = d }
            if let d = bearers.values[i].pending?.deadline, next.map({ d < $0 }) ?? true { next = d }
        }
        if let d = gattAccessDeadline, next.map({ d < $0 }) ?? true { next = d }
        return next
    }

    /// Fires expired timers: an unconfirmed indication closes its bearer (§3.3.3: the fixed
    /// bearer's by closing the connection, an Enhanced ATT bearer's channel alone);
    /// unanswered deferred accesses get Unlikely Error.
    public mutating func tick(now: Duration) -> [ATTServerOutput] {
        outputs = []
        for id in bearers.keys.sorted() {
            guard let b = bearers[id] else { continue }
            if let o = b.outstandingIndication, o.deadline <= now {
                emit(.indicationTimedOut(id.connection, characteristic: o.characteristic))
                if id.isEnhanced {
                    // §3.3.3: nothing more on this bearer; what waited on it goes to another
                    // (not the indication that timed out, if the transport never took it).
                    if var closed = removeBearer(id) {
                        if let k = closed.outgoing.firstIndex(where: { $0.isUpdate && $0.bytes.first == ATTOpcode.handleValueIndication.rawValue }) {
                            closed.outgoing.remove(at: k)
                        }
                        moveUpdates(of: closed, from: id, now: now)
                    }
                } else {
                    removeClient(id.connection)
                }
                outputs.append(.closeBearer(id, .transactionTimeout))
                continue
            }
            if let p = b.pending, p.deadline <= now { failPending(id, now: now) }
        }
        failGATTAccesses { $0.deadline <= now }
        checkReady()
        return takeOutputs()
    }
}
