// A client's GATT state that outlives its connection when it is bonded, change awareness
// and Robust Caching (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3, §7.1, §7.2).

extension ATTServer {
    /// The connection's client state as a bonded client's store keeps it.
    public func clientState(for id: ConnectionID) -> GATTClientState? {
        guard let b = clients[id] else { return nil }
        let keys = Self.characteristicKeys(database)
        var cccd: [String: UInt16] = [:]
        for (c, bits) in b.cccd where bits != 0 && c < keys.count { cccd[keys[c]] = bits }
        return GATTClientState(
            clientConfigurations: cccd, clientFeatures: b.clientFeatures,
            databaseHash: b.awareness.isChangeAware ? database.databaseHash : b.awareHash,
            serviceChangedOwed: b.serviceChangedOwed)
    }

    /// The connection's change awareness (§2.5.2.1).
    public func changeAwareness(for id: ConnectionID) -> ChangeAwareness? { clients[id]?.awareness }

    /// Whether the connection's client is treated as bonded (its CCCD writes wait for a commit).
    public func isBonded(_ id: ConnectionID) -> Bool { clients[id]?.isBonded ?? false }

    /// A bonded client was recognised on `id` (§3.3.3.3: CCCD values persist across
    /// connections for bonded devices): its CCCD bits come back for characteristics with
    /// the same key that still support them (bits written on this connection before win),
    /// its Client Supported Features are merged (set bits stay set, §7.2), and it is
    /// change-unaware when a Service Changed is owed or the database is not the one it knew.
    public mutating func restoreClientState(_ id: ConnectionID, _ state: GATTClientState) {
        guard var b = clients[id] else { return }
        var index: [String: Int] = [:]
        for (i, k) in Self.characteristicKeys(database).enumerated() { index[k] = i }
        var cccd: [Int: UInt16] = [:]
        for (key, bits) in state.clientConfigurations {
            guard let c = index[key] else { continue }
            let p = database.characteristics[c].properties
            let allowed: UInt16 = (p.canNotify ? 0x0001 : 0) | (p.canIndicate ? 0x0002 : 0)
            if bits & allowed != 0 { cccd[c] = bits & allowed }
        }
        for (c, bits) in b.cccd { cccd[c] = bits }
        b.cccd = cccd
        for (i, byte) in state.clientFeatures.enumerated().prefix(1) {
            let byte = byte & Self.supportedClientFeatures
            if i < b.clientFeatures.count { b.clientFeatures[i] |= byte } else { b.clientFeatures.append(byte) }
        }
        var owed = state.serviceChangedOwed
        if state.databaseHash != database.databaseHash, owed == nil { owed = .all }
        b.serviceChangedOwed = owed
        if owed == nil {
            b.awareness = .changeAware
        } else {
            b.awareness = .changeUnaware
            b.awareHash = state.databaseHash
        }
        b.isBonded = true
        clients[id] = b
    }

    /// The client on `id` just bonded: its state is committed with its writes from now on.
    public mutating func setBonded(_ id: ConnectionID) { clients[id]?.isBonded = true }

    /// The database changed over `range` (the hash was `oldHash`): every connected client
    /// becomes change-unaware and is owed a Service Changed for the range (§2.5.2.1).
    mutating func databaseChanged(from oldHash: [UInt8], range: HandleRange) {
        for i in clients.values.indices {
            if clients.values[i].awareness.isChangeAware { clients.values[i].awareHash = oldHash }
            clients.values[i].awareness = .changeUnaware
            clients.values[i].serviceChangedOwed = range.union(clients.values[i].serviceChangedOwed)
        }
    }

    /// Queues the Service Changed indication `id` is owed, when its client enabled
    /// indications of Service Changed; nil when there is nothing to send.
    public mutating func indicateServiceChangedOwed(_ id: ConnectionID, now: Duration) -> (result: NotifyResult, outputs: [ATTServerOutput])? {
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        guard let b = clients[id], let range = b.serviceChangedOwed, (b.cccd[sc] ?? 0) & 0x0002 != 0 else { return nil }
        return notify(characteristic: sc, value: range.serviceChangedValue, only: id, now: now)
    }

    mutating func becomeChangeAware(_ id: ConnectionID) {
        clients[id]?.awareness = .changeAware
        clients[id]?.serviceChangedOwed = nil
        clients[id]?.awareHash = []
    }

    /// A Service Changed confirmed on `bearer`, unless another one waits on any bearer of the
    /// client or is outstanding on another, settles what the client was owed; it makes the
    /// client change-aware only when it uses exactly one ATT bearer (§2.5.2.1).
    mutating func serviceChangedConfirmed(_ bearer: BearerID) {
        let id = bearer.connection
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        let channels = clients[id]?.channels ?? []
        for ch in channels {
            guard let b = bearers[BearerID(id, channel: ch)] else { continue }
            if b.waitingIndications.contains(where: { $0.characteristic == sc }) { return }
            if ch != bearer.channel, b.outstandingIndication?.characteristic == sc { return }
        }
        if channels.count == 1 { becomeChangeAware(id) } else { clients[id]?.serviceChangedOwed = nil }
    }

    /// The Database Hash value was sent to a change-unaware client: its next request, on any
    /// of its bearers, makes it change-aware (§2.5.2.1).
    mutating func databaseHashRead(_ id: ConnectionID) {
        guard let aware = clients[id]?.awareness.isChangeAware, !aware else { return }
        clients[id]?.awareness = .changeUnawareHashRead
    }

    /// §2.5.2.1 for a change-unaware client, before a decoded PDU is processed. A request on
    /// any bearer after a Database Hash read makes it change-aware; after a Database Out Of
    /// Sync, only when it uses exactly one ATT bearer. When it
    /// enabled Robust Caching: its commands are ignored, and its requests other than Exchange
    /// MTU and Read By Type of the Database Hash UUID are answered Database Out Of Sync
    /// (0x12, handle 0x0000) and not performed. False: the PDU is not to be processed.
    mutating func changeAwarenessAllows(_ pdu: ATTPDU, opcode: UInt8, _ bearer: BearerID) -> Bool {
        let id = bearer.connection
        guard let b = clients[id], !b.awareness.isChangeAware else { return true }
        let op = ATTOpcode(rawValue: opcode)
        if op == .exchangeMTURequest || op == .handleValueConfirmation { return true }
        let isRequest = op?.isClientRequest ?? false
        if isRequest, b.awareness == .changeUnawareHashRead || b.awareness == .changeUnawareOutOfSyncSent && b.channels.count == 1 {
            becomeChangeAware(id)
            return true
        }
        guard (b.clientFeatures.first ?? 0) & 0x01 != 0 else { return true }
        guard isRequest else { return !ATTOpcode.isCommand(opcode) }
        if case .readByTypeRequest(_, _, let type) = pdu, type == GATTUUID.databaseHash { return true }
        clients[id]?.awareness = .changeUnawareOutOfSyncSent
        sendError(opcode, 0, .databaseOutOfSync, to: bearer)
        return false
    }

    /// For a bonded client whose Write Request or Execute Write changes its CCCDs or Client
    /// Supported Features: the first such handle and the state after the writes (to be
    /// committed before the response); nil otherwise.
    func bondedClientState(after writes: [(AttributeHandle, [UInt8])], _ bearer: BearerID) -> (handle: AttributeHandle, state: GATTClientState)? {
        let id = bearer.connection
        guard clients[id]?.isBonded == true else { return nil }
        var copy = self
        var first: AttributeHandle?
        for (h, v) in writes {
            guard let a = database.attribute(at: h) else { continue }
            switch a.role {
            case .clientCharacteristicConfiguration: break
            case .characteristicValue(let c) where c == clientFeaturesCharacteristic: break
            default: continue
            }
            first = first ?? h
            copy.applyWrite(h, v, bearer)
        }
        guard let first, let after = copy.clientState(for: id), after != clientState(for: id) else { return nil }
        return (first, after)
    }
}
