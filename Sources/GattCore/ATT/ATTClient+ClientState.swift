// A client's GATT state that outlives its connection when it is bonded, change awareness
// and Robust Caching (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3, §7.1, §7.2).

extension ATTClient {
    /// The client's state as a bonded client's store keeps it, CCCDs by characteristic key
    /// (`CharacteristicKeyMap.keys`).
    func state(in database: GATTDatabase) -> GATTClientState {
        let keys = CharacteristicKeyMap.keys(database)
        var configurations: [String: UInt16] = [:]
        for (c, bits) in cccd where bits != 0 && c.rawValue < keys.count { configurations[keys[c.rawValue]] = bits }
        return GATTClientState(
            clientConfigurations: configurations, clientFeatures: clientFeatures,
            databaseHash: awareness.isChangeAware ? database.databaseHash : awareHash,
            serviceChangedOwed: serviceChangedOwed)
    }

    /// A bonded client was recognised (§3.3.3.3: CCCD values persist across connections for
    /// bonded devices): its CCCD bits come back for characteristics with the same key that
    /// still support them (bits written on this connection before win), its Client Supported
    /// Features are merged (set bits stay set, §7.2), and it is change-unaware when a Service
    /// Changed is owed or the database is not the one it knew.
    mutating func restore(_ state: GATTClientState, in database: GATTDatabase) {
        let index = CharacteristicKeyMap.index(database)
        var restored: [CharacteristicIndex: UInt16] = [:]
        for (key, bits) in state.clientConfigurations {
            guard let c = index[key] else { continue }
            let allowed = Self.cccdBits(bits, allowedBy: database[c].properties)
            if allowed != 0 { restored[c] = allowed }
        }
        for (c, bits) in cccd { restored[c] = bits }
        cccd = restored
        for (i, byte) in state.clientFeatures.enumerated().prefix(1) {
            let byte = byte & Self.supportedClientFeatures
            if i < clientFeatures.count { clientFeatures[i] |= byte } else { clientFeatures.append(byte) }
        }
        var owed = state.serviceChangedOwed
        if state.databaseHash != database.databaseHash, owed == nil { owed = .all }
        serviceChangedOwed = owed
        if owed == nil {
            awareness = .changeAware
        } else {
            awareness = .changeUnaware
            awareHash = state.databaseHash
        }
        isBonded = true
    }

    /// The database was replaced (`map` from the old one to `new`): CCCD bits follow a
    /// characteristic that keeps its key and still supports them; prepared writes are dropped.
    mutating func databaseReplaced(_ map: CharacteristicKeyMap, by new: GATTDatabase) {
        cccd = map.cccd(cccd, in: new)
        prepareQueue = []
        preparedBytes = 0
    }

    /// The database changed over `range` (the hash was `oldHash`): the client becomes
    /// change-unaware and is owed a Service Changed for the range (§2.5.2.1).
    mutating func databaseChanged(from oldHash: [UInt8], range: HandleRange) {
        if awareness.isChangeAware { awareHash = oldHash }
        awareness = .changeUnaware
        serviceChangedOwed = range.union(serviceChangedOwed)
    }

    mutating func becomeChangeAware() {
        awareness = .changeAware
        serviceChangedOwed = nil
        awareHash = []
    }

    /// Its Service Changed was confirmed, with no other one waiting: what it was owed is
    /// settled; it is change-aware only when it uses exactly one ATT bearer (§2.5.2.1).
    mutating func serviceChangedConfirmed(bearerCount: Int) {
        if bearerCount == 1 { becomeChangeAware() } else { serviceChangedOwed = nil }
    }

    /// The Database Hash value was sent to it: when change-unaware, its next request, on any
    /// of its bearers, makes it change-aware (§2.5.2.1).
    mutating func databaseHashRead() {
        guard !awareness.isChangeAware else { return }
        awareness = .changeUnawareHashRead
    }

    /// What §2.5.2.1 makes of a decoded PDU before it is processed.
    enum ChangeAwarenessVerdict {
        case process, ignore
        /// Answer Database Out Of Sync (0x12, handle 0x0000) and do not perform it.
        case outOfSync
    }

    /// §2.5.2.1 for a change-unaware client (`bearerCount`: its ATT bearers). A request on any
    /// bearer after a Database Hash read makes it change-aware; after a Database Out Of Sync,
    /// only when it uses exactly one ATT bearer. When it enabled Robust Caching: its commands
    /// are ignored, and its requests other than Exchange MTU and Read By Type of the Database
    /// Hash UUID are answered Database Out Of Sync and not performed.
    mutating func changeAwareness(of pdu: ATTPDU, opcode: UInt8, bearerCount: Int) -> ChangeAwarenessVerdict {
        guard !awareness.isChangeAware else { return .process }
        let op = ATTOpcode(rawValue: opcode)
        if op == .exchangeMTURequest || op == .handleValueConfirmation { return .process }
        let isRequest = op?.isClientRequest ?? false
        if isRequest, awareness == .changeUnawareHashRead || awareness == .changeUnawareOutOfSyncSent && bearerCount == 1 {
            becomeChangeAware()
            return .process
        }
        guard (clientFeatures.first ?? 0) & 0x01 != 0 else { return .process }
        guard isRequest else { return ATTOpcode.isCommand(opcode) ? .ignore : .process }
        if case .readByTypeRequest(_, _, let type) = pdu, type == GATTUUID.databaseHash { return .process }
        awareness = .changeUnawareOutOfSyncSent
        return .outOfSync
    }
}
