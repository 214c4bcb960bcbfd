import DequeModule

/// The ATT bearers of every connected client (Core Spec Vol 3 Part F §3.2.11) and the flow on
/// them: each bearer's outgoing queue and the backpressure of `notify` (`.busy`, then
/// `.ready`), which bearer carries each characteristic's updates to a client, the requests
/// waiting for deferred accesses with their held PDUs, and each bearer's transaction timers
/// (§3.3.3). `ATTServer` decides what to send; this table queues it, appending
/// `.outgoingAvailable` and its other outputs to the caller's `outputs`.
///
/// Bearers (§3.2.11) each have their own transaction, ATT_MTU, queue and indication in
/// flight; a request waiting on one holds nothing on another. A characteristic's
/// notifications and indications to a client all take the bearer its first one took (the
/// least loaded then; for an indication, one without an outstanding one first; ties to the
/// fixed bearer) until that bearer closes, so they arrive in the order they were submitted;
/// a closed bearer's queued updates move, in order, to another (`close`). An unconfirmed
/// indication on an Enhanced ATT bearer closes that channel only.
struct ATTBearers: Sendable {
    typealias Index = Dictionary<BearerID, ATTBearer>.Index

    /// One per ATT bearer.
    private(set) var bearers: [BearerID: ATTBearer] = [:]
    /// Each connection's bearers and the bearer each characteristic's updates take.
    private var connections: [ConnectionID: Connection] = [:]
    /// The bearer each waiting deferred access belongs to.
    private(set) var pendingRequests: [PendingRequestID: BearerID] = [:]
    /// Clients whose full queues made `notify` return `.busy`, until they have room.
    private(set) var busyConnections: Set<ConnectionID> = []
    /// Whether a `.ready` is owed (`checkReady`).
    private var readyOwed = false

    /// A connection's bearers.
    private struct Connection: Sendable {
        /// Its bearers by channel, the fixed one first, then in the order they opened.
        var channels: [UInt16] = [BearerID.fixedATTChannel]
        /// The bearer (channel) each characteristic's updates take: chosen at its first update
        /// and kept until that bearer closes, so one characteristic's updates reach the client
        /// in the order they were submitted (`updateBearer(of:characteristic:indication:)`).
        var updateChannels: [CharacteristicIndex: UInt16] = [:]
    }

    // MARK: Bearers

    /// A connection and its fixed bearer (ATT_MTU 23).
    mutating func connect(_ id: ConnectionID) {
        connections[id] = Connection()
        bearers[.fixed(id)] = ATTBearer()
    }

    /// Forgets a connection and every bearer of it.
    mutating func disconnect(_ id: ConnectionID) {
        guard let c = connections.removeValue(forKey: id) else { return }
        for ch in c.channels { remove(BearerID(id, channel: ch)) }
    }

    /// An Enhanced ATT bearer of a connection opened; false for an unknown connection or a
    /// bearer already open.
    mutating func open(_ id: BearerID, mtu: Int) -> Bool {
        guard connections[id.connection] != nil, bearers[id] == nil else { return false }
        bearers[id] = ATTBearer(mtu: mtu)
        connections[id.connection]?.channels.append(id.channel)
        return true
    }

    /// Forgets one bearer (its outstanding deferred accesses become unknown) and returns it.
    @discardableResult
    mutating func remove(_ id: BearerID) -> ATTBearer? {
        connections[id.connection]?.channels.removeAll { $0 == id.channel }
        guard let b = bearers.removeValue(forKey: id) else { return nil }
        for w in b.pending?.waiting ?? [] { pendingRequests[w.id] = nil }
        return b
    }

    /// An Enhanced ATT bearer closed: forgotten; an indication the transport took and the client
    /// did not confirm is reported (`.indicationUnconfirmed`), and the updates it still held
    /// move to another bearer of the client (`moveUpdates`). With `dropIndication` (its
    /// transaction timed out, §3.3.3) the indication still in its queue is dropped instead.
    mutating func close(_ id: BearerID, dropIndication: Bool = false, deadline: Duration, database: GATTDatabase, into outputs: inout [ATTServerOutput]) {
        guard var closed = remove(id) else { return }
        let queued = closed.outgoing.firstIndex { $0.isUpdate && $0.bytes.first == ATTOpcode.handleValueIndication.rawValue }
        if dropIndication {
            if let k = queued { closed.outgoing.remove(at: k) }
        } else if let o = closed.outstandingIndication, queued == nil {
            // Taken by the transport: no confirmation can come for it on another bearer
            // (§3.3.2: a confirmation answers its own bearer's indication).
            outputs.append(.event(.indicationUnconfirmed(id.connection, characteristic: o.characteristic)))
        }
        moveUpdates(of: closed, from: id, deadline: deadline, database: database, into: &outputs)
    }

    /// An Enhanced ATT bearer's MTU grew; false for an unknown bearer or a smaller MTU.
    mutating func reconfigure(_ id: BearerID, mtu: Int) -> Bool {
        guard let old = bearers[id]?.mtu, mtu >= old else { return false }
        bearers[id]?.mtu = mtu
        return true
    }

    /// The connection's bearers, the fixed one first (empty for an unknown connection).
    func bearers(of id: ConnectionID) -> [BearerID] {
        connections[id]?.channels.map { BearerID(id, channel: $0) } ?? []
    }

    /// How many ATT bearers the connection uses.
    func bearerCount(of id: ConnectionID) -> Int { connections[id]?.channels.count ?? 0 }

    /// How many bearers are open, of every connection.
    var count: Int { bearers.count }
    var isEmpty: Bool { bearers.isEmpty }
    func index(of id: BearerID) -> Index? { bearers.index(forKey: id) }
    func id(at i: Index) -> BearerID { bearers.keys[i] }
    func mtu(of id: BearerID) -> Int? { bearers[id]?.mtu }
    /// Read in place: `bearers.values[i]` read through its getter copies the whole bearer.
    mutating func mtu(at i: Index) -> Int { inBearer(i) { $0.mtu } }

    /// The first Exchange MTU of the fixed bearer sets its ATT_MTU (`clientMTU` bounded by
    /// 23 and `serverMTU`) and returns it; a later one changes nothing (nil).
    mutating func exchangeMTU(_ id: BearerID, clientMTU: UInt16, serverMTU: Int) -> Int? {
        guard let b = bearers[id], !b.mtuExchanged else { return nil }
        let mtu = min(max(23, Int(clientMTU)), serverMTU)
        bearers[id]?.mtu = mtu
        bearers[id]?.mtuExchanged = true
        return mtu
    }

    // MARK: Transactions (§3.3.2)

    /// Holds `pdu` (up to `max` of them) when the bearer's request waits; true if it waits.
    mutating func holdIfWaiting(_ pdu: [UInt8], at i: Index, max: Int) -> Bool { inBearer(i) { $0.hold(pdu, max: max) } }

    /// Whether the bearer's answer to its previous request still waits in its queue.
    mutating func answerQueued(at i: Index) -> Bool { inBearer(i) { $0.outgoing.count > $0.queuedUpdates } }

    /// The next held PDU to process, while no request waits.
    mutating func nextHeld(_ id: BearerID) -> [UInt8]? {
        guard let i = bearers.index(forKey: id) else { return nil }
        return inBearer(i) { $0.pending == nil ? $0.held.popFirst() : nil }
    }

    /// The bearer's request now waits for these deferred accesses (`waiting`: their ids and handles).
    mutating func wait(_ id: BearerID, for operation: PendingOperation) {
        for w in operation.waiting { pendingRequests[w.id] = id }
        bearers[id]?.pending = operation
    }

    /// The bearer a deferred access waits on.
    func bearer(waitingOn request: PendingRequestID) -> BearerID? { pendingRequests[request] }

    /// Takes the answer to `request`: its bearer, that bearer's waiting request (without
    /// `request` among the accesses it waits for) and the handle `request` concerns.
    mutating func answer(_ request: PendingRequestID) -> (bearer: BearerID, operation: PendingOperation, handle: AttributeHandle)? {
        guard let id = pendingRequests.removeValue(forKey: request), var p = bearers[id]?.pending,
            let index = p.waiting.firstIndex(where: { $0.id == request })
        else { return nil }
        let handle = p.waiting.remove(at: index).handle
        bearers[id]?.pending = p
        return (id, p, handle)
    }

    /// The bearer's request stops waiting: returned, with the ids it still waited on forgotten.
    @discardableResult
    mutating func endWait(_ id: BearerID) -> PendingOperation? {
        guard let p = bearers[id]?.pending else { return nil }
        for w in p.waiting { pendingRequests[w.id] = nil }
        bearers[id]?.pending = nil
        return p
    }

    /// The bearers whose request waits for a read or write deferred access (not a commit).
    var waitingForReadsOrWrites: [BearerID] { bearers.keys.sorted().filter { bearers[$0]?.pending?.isCommit == false } }

    // MARK: Indications (§3.4.7.2, §3.4.7.3)

    /// A Handle Value Confirmation: `.indicationConfirmed` and the outstanding indication's
    /// characteristic (nil: none, the confirmation is ignored); the next waiting indication
    /// goes out, due by `deadline`.
    mutating func confirm(_ id: BearerID, deadline: Duration, into outputs: inout [ATTServerOutput]) -> CharacteristicIndex? {
        guard let i = bearers.index(forKey: id), let r = inBearer(i, { $0.confirm(nextDeadline: deadline) }) else { return nil }
        outputs.append(.event(.indicationConfirmed(id.connection, characteristic: r.confirmed)))
        if let next = r.next { enqueue(next, isUpdate: true, at: i, id, into: &outputs) }
        return r.confirmed
    }

    /// Whether a Service Changed (`sc`) waits on any bearer of the connection, or is outstanding
    /// on one other than `bearer`: then a confirmation on `bearer` settles nothing yet.
    func serviceChangedWaits(_ sc: CharacteristicIndex, besides bearer: BearerID) -> Bool {
        for ch in connections[bearer.connection]?.channels ?? [] {
            guard let b = bearers[BearerID(bearer.connection, channel: ch)] else { continue }
            if b.waitingIndications.contains(where: { $0.characteristic == sc }) { return true }
            if ch != bearer.channel, b.outstandingIndication?.characteristic == sc { return true }
        }
        return false
    }

    // MARK: Outgoing queue

    func hasOutgoing(_ id: BearerID) -> Bool { !(bearers[id]?.outgoing.isEmpty ?? true) }

    /// The next PDU to transmit on a bearer (`.ready` follows once every queue that made
    /// `notify` busy has room).
    mutating func dequeue(_ id: BearerID, maxQueuedUpdates: Int, into outputs: inout [ATTServerOutput]) -> [UInt8]? {
        // In place: a copy of the bearer would copy its queue for every PDU.
        guard let i = bearers.index(forKey: id), let next = inBearer(i, { $0.outgoing.popFirst() }) else { return nil }
        if next.isUpdate { inBearer(i) { $0.queuedUpdates -= 1 } }
        checkReady(maxQueuedUpdates: maxQueuedUpdates, into: &outputs)
        return next.bytes
    }

    mutating func enqueue(_ bytes: [UInt8], isUpdate: Bool, to id: BearerID, into outputs: inout [ATTServerOutput]) {
        guard let i = bearers.index(forKey: id) else { return }
        enqueue(bytes, isUpdate: isUpdate, at: i, id, into: &outputs)
    }

    /// `enqueue(_:isUpdate:to:into:)` when the bearer's index is known (`id` is its key).
    mutating func enqueue(_ bytes: [UInt8], isUpdate: Bool, at i: Index, _ id: BearerID, into outputs: inout [ATTServerOutput]) {
        inBearer(i) { b in
            b.outgoing.append(.init(bytes: bytes, isUpdate: isUpdate))
            if isUpdate { b.queuedUpdates += 1 }
        }
        let available = ATTServerOutput.outgoingAvailable(id)
        if !outputs.contains(available) { outputs.append(available) }
    }

    /// Queues update `pdu` of characteristic `c` on the bearer at `i` (`id`), pinning `c` to
    /// it; an indication waits behind the outstanding one (§3.4.7.2), else is due by `deadline`.
    mutating func queueUpdate(_ pdu: [UInt8], indication: Bool, of c: CharacteristicIndex, at i: Index, _ id: BearerID, deadline: Duration, into outputs: inout [ATTServerOutput]) {
        pin(c, to: id)
        if let now = inBearer(i, { $0.takeUpdate(pdu, indication: indication, of: c, deadline: deadline) }) {
            enqueue(now, isUpdate: true, at: i, id, into: &outputs)
        }
    }

    /// Notifications/indications queued for a connection, on all its bearers, and not yet
    /// pulled; nil for an unknown connection.
    func queuedUpdates(for id: ConnectionID) -> Int? {
        let ids = bearers(of: id)
        return ids.isEmpty ? nil : ids.reduce(0) { $0 + (bearers[$1]?.updateCount ?? 0) }
    }

    func queuedUpdates(for id: BearerID) -> Int? { bearers[id]?.updateCount }

    /// Updates queued on the bearer at `i`, and its ATT_MTU (read in place).
    mutating func load(at i: Index) -> (mtu: Int, updateCount: Int) { inBearer(i) { ($0.mtu, $0.updateCount) } }

    // MARK: Backpressure

    /// `notify` found the client's queue full: `.ready` is owed once it has room.
    mutating func markBusy(_ id: ConnectionID) {
        busyConnections.insert(id)
        readyOwed = true
    }

    /// Emits `.ready` when `notify` returned `.busy` and every client that was full has a
    /// bearer at most half full: a low-water mark, so that a waiting burst resumes with room
    /// for many notifications (one event-loop turn, one write), not one per completed packet.
    mutating func checkReady(maxQueuedUpdates: Int, into outputs: inout [ATTServerOutput]) {
        guard readyOwed else { return }
        let half = maxQueuedUpdates / 2
        busyConnections = busyConnections.filter { id in
            guard let channels = connections[id]?.channels else { return false }
            return !channels.contains { (bearers[BearerID(id, channel: $0)]?.updateCount ?? .max) <= half }
        }
        if busyConnections.isEmpty {
            readyOwed = false
            outputs.append(.event(.ready))
        }
    }

    // MARK: Which bearer carries an update

    /// The bearer (channel) each characteristic's updates to a connection take.
    func updateChannels(of id: ConnectionID) -> [CharacteristicIndex: UInt16]? { connections[id]?.updateChannels }

    /// The bearer characteristic `c`'s updates to a connection took, if any.
    func updateChannel(of id: ConnectionID, characteristic c: CharacteristicIndex) -> UInt16? { connections[id]?.updateChannels[c] }

    /// The bearer that carries characteristic `c`'s next notification or indication to a
    /// client: the one its earlier updates took, so that they arrive in the order they were
    /// submitted whatever the bearers' credits and queues (a PDU the transport took may still
    /// wait for credits there); for a characteristic without one, `freeUpdateBearer`. The
    /// caller pins the choice (`pin`) when it queues the update.
    mutating func updateBearer(of id: ConnectionID, characteristic c: CharacteristicIndex, indication: Bool) -> Index? {
        guard let ci = connections.index(forKey: id) else { return nil }
        if let ch = inConnection(ci, { $0.updateChannels[c] }), let i = bearers.index(forKey: BearerID(id, channel: ch)) { return i }
        return freeUpdateBearer(of: id, indication: indication)
    }

    /// The least loaded of a client's bearers (fewest updates queued; for an indication, one
    /// with none outstanding first, so it goes out now), ties to the earliest opened, the fixed
    /// bearer first: where a characteristic's first update goes (and a closed bearer's updates).
    mutating func freeUpdateBearer(of id: ConnectionID, indication: Bool) -> Index? {
        guard let ci = connections.index(forKey: id) else { return nil }
        if let only = inConnection(ci, { $0.channels.count == 1 ? $0.channels[0] : nil }) { return bearers.index(forKey: BearerID(id, channel: only)) }
        let channels = inConnection(ci) { $0.channels }
        var best: (index: Index, busy: Int, load: Int)?
        for ch in channels {
            guard let i = bearers.index(forKey: BearerID(id, channel: ch)) else { continue }
            // In place (a bearer read whole through the getter is a copy of its queues).
            let (busy, load) = (indication && bearers.values[i].outstandingIndication != nil ? 1 : 0, bearers.values[i].updateCount)
            if let b = best, (b.busy, b.load) <= (busy, load) { continue }
            best = (i, busy, load)
        }
        return best?.index
    }

    /// Keeps characteristic `c`'s updates to the client on `bearer` from now on.
    mutating func pin(_ c: CharacteristicIndex, to bearer: BearerID) {
        guard let i = connections.index(forKey: bearer.connection) else { return }
        inConnection(i) { if $0.updateChannels[c] != bearer.channel { $0.updateChannels[c] = bearer.channel } }
    }

    /// The updates a closed Enhanced ATT bearer still held (queued, or waiting behind its
    /// outstanding indication) go to one other bearer of the client, in the order they were
    /// queued, each cut to that bearer's ATT_MTU (`ATTBearer.fit`), and the characteristics
    /// that took the closed bearer take that one. Without such updates they choose afresh. (An
    /// update the transport had already taken from the closed bearer is gone with its channel.)
    mutating func moveUpdates(of closed: ATTBearer, from id: BearerID, deadline: Duration, database: GATTDatabase, into outputs: inout [ATTServerOutput]) {
        guard let ci = connections.index(forKey: id.connection) else { return }
        let moved = connections.values[ci].updateChannels.filter { $0.value == id.channel }.map(\.key)
        for c in moved { connections.values[ci].updateChannels[c] = nil }
        let pdus = closed.outgoing.filter(\.isUpdate).map(\.bytes) + closed.waitingIndications.map(\.bytes)
        let anyIndication = pdus.contains { $0.first == ATTOpcode.handleValueIndication.rawValue }
        guard !pdus.isEmpty, let ti = freeUpdateBearer(of: id.connection, indication: anyIndication) else { return }
        let target = bearers.keys[ti]
        for c in moved { pin(c, to: target) }
        let mtu = mtu(at: ti)
        for pdu in pdus {
            for part in ATTBearer.fit(pdu, mtu: mtu) {
                let indication = part.first == ATTOpcode.handleValueIndication.rawValue
                let c = indication ? Self.characteristic(ofIndication: part, in: database) : GATTDatabase.BuiltIn.serviceChanged.index
                if let now = inBearer(ti, { $0.takeUpdate(part, indication: indication, of: c, deadline: deadline) }) {
                    enqueue(now, isUpdate: true, at: ti, target, into: &outputs)
                }
            }
        }
    }

    /// The characteristic whose value handle an indication names.
    private static func characteristic(ofIndication pdu: [UInt8], in database: GATTDatabase) -> CharacteristicIndex {
        let handle = AttributeHandle(UInt16(pdu[1]) | UInt16(pdu[2]) << 8)
        if case .characteristicValue(let c)? = database.attribute(at: handle)?.role { return c }
        return GATTDatabase.BuiltIn.serviceChanged.index
    }

    // MARK: Timers

    /// The earliest indication or request deadline.
    var nextDeadline: Duration? {
        // By index, reading the two fields in place: `for b in bearers.values` copies each
        // bearer whole (queues and all), and the daemon asks after every event.
        var next: Duration?
        for i in bearers.values.indices {
            if let d = bearers.values[i].outstandingIndication?.deadline, next.map({ d < $0 }) ?? true { next = d }
            if let d = bearers.values[i].pending?.deadline, next.map({ d < $0 }) ?? true { next = d }
        }
        return next
    }

    /// The bearers, in order (what `tick` walks).
    var ids: [BearerID] { bearers.keys.sorted() }

    /// The characteristic of the bearer's indication when its transaction timed out by `now`.
    func expiredIndication(_ id: BearerID, now: Duration) -> CharacteristicIndex? {
        guard let o = bearers[id]?.outstandingIndication, o.deadline <= now else { return nil }
        return o.characteristic
    }

    /// Whether the bearer's waiting request timed out by `now`.
    func requestExpired(_ id: BearerID, now: Duration) -> Bool {
        guard let d = bearers[id]?.pending?.deadline else { return false }
        return d <= now
    }

    // MARK: Reload

    /// The database was replaced (`map` from the old one to `new`): characteristics keep their
    /// bearers, a waiting commit's writes move to their attributes' new handles, indications
    /// waiting behind the outstanding one are dropped (their handles may be stale).
    mutating func databaseReplaced(_ map: CharacteristicKeyMap, from old: GATTDatabase, to new: GATTDatabase) {
        for id in connections.keys {
            var moved: [CharacteristicIndex: UInt16] = [:]
            for (c, ch) in connections[id]?.updateChannels ?? [:] { if let n = map[c] { moved[n] = ch } }
            connections[id]?.updateChannels = moved
        }
        for i in bearers.values.indices { bearers.values[i].databaseReplaced(map, from: old, to: new) }
    }

    /// Reads or changes the bearer at `i` in place: `bearers.values[i]` or `bearers[id]`
    /// read through their getters copy the whole bearer (its queues and tables).
    mutating func inBearer<T>(_ i: Index, _ body: (inout ATTBearer) -> T) -> T {
        body(&bearers.values[i])
    }

    /// `inBearer` of a connection's entry.
    private mutating func inConnection<T>(_ i: Dictionary<ConnectionID, Connection>.Index, _ body: (inout Connection) -> T) -> T {
        body(&connections.values[i])
    }
}
