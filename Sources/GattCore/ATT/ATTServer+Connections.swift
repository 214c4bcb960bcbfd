// A client's bearers and outgoing queues (Core Spec Vol 3 Part F §3.2.11, `ATTBearers`), its
// GATT state that outlives a connection when it is bonded (Vol 3 Part G §2.5.2.1, §3.3.3.3,
// `ATTClient`), and the database replaced under the connections (a config reload).

extension ATTServer {
    // MARK: Bearers

    /// An Enhanced ATT bearer of a connected client opened: an L2CAP Enhanced Credit Based
    /// channel on PSM 0x0027 (§3.2.11). Its ATT_MTU is the channel's MTU (the smaller of both
    /// sides' MTUs, §3.2.8); no Exchange MTU happens on it. False (nothing changed) for an
    /// unknown client, the fixed channel, or a bearer already open.
    @discardableResult
    public mutating func openBearer(_ id: BearerID, mtu: Int) -> Bool {
        guard id.isEnhanced, clients[id.connection] != nil else { return false }
        return bearers.open(id, mtu: max(23, mtu))
    }

    /// An Enhanced ATT bearer's channel closed (`ATTBearers.close`: its outstanding deferred
    /// accesses become unknown and its queued responses are dropped, an indication the transport
    /// took is reported `.indicationUnconfirmed`, not re-sent, its updates move to another
    /// bearer); the client and its other bearers stay. The fixed bearer's is `disconnect`.
    public mutating func closeBearer(_ id: BearerID, now: Duration) -> [ATTServerOutput] {
        guard id.isEnhanced else { return disconnect(id.connection) }
        outputs = []
        bearers.close(id, deadline: now + configuration.transactionTimeout, database: database, into: &outputs)
        checkReady()
        return takeOutputs()
    }

    /// An Enhanced ATT bearer's channel was reconfigured to a new MTU (L2CAP Credit Based
    /// Reconfigure, Vol 3 Part A §4.27: an MTU may only grow): its ATT_MTU follows. False
    /// (nothing changed) for an unknown or fixed bearer, or a smaller MTU.
    @discardableResult
    public mutating func reconfigureBearer(_ id: BearerID, mtu: Int) -> Bool { id.isEnhanced && bearers.reconfigure(id, mtu: mtu) }

    /// The connection's bearers, the fixed one first (empty for an unknown connection).
    public func bearers(of id: ConnectionID) -> [BearerID] { bearers.bearers(of: id) }
    /// A bearer's ATT_MTU.
    public func mtu(for id: BearerID) -> Int? { bearers.mtu(of: id) }
    public func hasOutgoing(_ id: BearerID) -> Bool { bearers.hasOutgoing(id) }

    /// The next PDU to transmit on a bearer, with outputs that pulling it caused (`.ready`
    /// once every queue that made `notify` busy has room).
    public mutating func dequeueOutgoing(for id: BearerID) -> (pdu: [UInt8], outputs: [ATTServerOutput])? {
        outputs = []
        guard let pdu = bearers.dequeue(id, maxQueuedUpdates: configuration.maxQueuedUpdates, into: &outputs) else { return nil }
        return (pdu, takeOutputs())
    }

    /// Notifications/indications queued for a connection, on all its bearers, and not yet
    /// pulled; nil for an unknown connection.
    public func queuedUpdates(for id: ConnectionID) -> Int? { bearers.queuedUpdates(for: id) }
    /// Notifications/indications queued on one bearer and not yet pulled (what `notify`
    /// counts against `maxQueuedUpdates`); nil for an unknown bearer.
    public func queuedUpdates(for id: BearerID) -> Int? { bearers.queuedUpdates(for: id) }

    // MARK: Client state

    /// The connection's client state as a bonded client's store keeps it.
    public func clientState(for id: ConnectionID) -> GATTClientState? { clients[id]?.state(in: database) }
    /// The connection's change awareness (§2.5.2.1).
    public func changeAwareness(for id: ConnectionID) -> ChangeAwareness? { clients[id]?.awareness }
    /// Whether the connection's client is treated as bonded (its CCCD writes wait for a commit).
    public func isBonded(_ id: ConnectionID) -> Bool { clients[id]?.isBonded ?? false }
    /// The client on `id` just bonded: its state is committed with its writes from now on.
    public mutating func setBonded(_ id: ConnectionID) { clients[id]?.isBonded = true }

    /// A bonded client was recognised on `id`: its stored state comes back (`ATTClient.restore`).
    public mutating func restoreClientState(_ id: ConnectionID, _ state: GATTClientState) {
        clients[id]?.restore(state, in: database)
    }

    /// The database changed over `range` (the hash was `oldHash`): every connected client
    /// becomes change-unaware and is owed a Service Changed for the range (§2.5.2.1).
    mutating func databaseChanged(from oldHash: [UInt8], range: HandleRange) {
        for i in clients.values.indices { clients.values[i].databaseChanged(from: oldHash, range: range) }
    }

    /// Queues the Service Changed indication `id` is owed, when its client enabled
    /// indications of Service Changed; nil when there is nothing to send.
    public mutating func indicateServiceChangedOwed(_ id: ConnectionID, now: Duration) -> (result: NotifyResult, outputs: [ATTServerOutput])? {
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        guard let b = clients[id], let range = b.serviceChangedOwed, (b.cccd[sc] ?? 0) & 0x0002 != 0 else { return nil }
        return notify(characteristic: sc, value: range.serviceChangedValue, only: id, now: now)
    }

    // MARK: Reload

    /// Serves `newDatabase` from now on, keeping every connection (Core Spec Vol 3 Part G
    /// §2.5.2: the server then indicates Service Changed). Outstanding read/write deferred
    /// accesses are failed first (Unlikely Error); what follows a characteristic that keeps its
    /// key (stored values, CCCD bits, its updates' bearer, a waiting commit's writes) is
    /// `CharacteristicKeyMap`'s, `ATTClient.databaseReplaced`'s and `ATTBearer.databaseReplaced`'s.
    public mutating func replaceDatabase(_ newDatabase: GATTDatabase, now: Duration) -> [ATTServerOutput] {
        var out = failDeferredAccesses(now: now)
        outputs = []
        let map = CharacteristicKeyMap(from: database, to: newDatabase)
        var db = newDatabase
        map.carryValues(from: database, into: &db)
        for i in clients.values.indices { clients.values[i].databaseReplaced(map, by: db) }
        bearers.databaseReplaced(map, from: database, to: db)
        database = db
        checkReady()
        out += takeOutputs()
        return out
    }
}
