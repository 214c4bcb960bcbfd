// Replacing the database on a config reload (SIGHUP), and queue introspection.

extension ATTServer {
    /// Notifications/indications queued for a connection, on all its bearers, and not yet
    /// pulled; nil for an unknown connection.
    public func queuedUpdates(for id: ConnectionID) -> Int? {
        bearers(of: id).isEmpty ? nil : bearers(of: id).reduce(0) { $0 + (bearers[$1]?.updateCount ?? 0) }
    }

    /// Notifications/indications queued on one bearer and not yet pulled (what `notify`
    /// counts against `maxQueuedUpdates`); nil for an unknown bearer.
    public func queuedUpdates(for id: BearerID) -> Int? { bearers[id]?.updateCount }

    /// Serves `newDatabase` from now on, keeping every connection (Core Spec
    /// Vol 3 Part G §2.5.2: the server then indicates Service Changed).
    ///
    /// - Outstanding read/write deferred accesses are failed first (Unlikely Error); a commit
    ///   stays, its writes moved to where their attributes are now (`remap`); prepared writes
    ///   are dropped, and indications waiting behind the outstanding one are dropped (their
    ///   handles may be stale).
    /// - Per-connection CCCD bits follow a characteristic that keeps its `key`
    ///   (config id, else UUID with its occurrence number) and still supports them.
    /// - Stored values of user characteristics with the same key carry over when
    ///   they fit the new maximum length (built-in GAP/GATT values come from the new database).
    public mutating func replaceDatabase(_ newDatabase: GATTDatabase, now: Duration) -> [ATTServerOutput] {
        var out = failDeferredAccesses(now: now)
        outputs = []
        let oldKeys = Self.characteristicKeys(database)
        var newIndex: [String: CharacteristicIndex] = [:]
        for (i, k) in Self.characteristicKeys(newDatabase).enumerated() { newIndex[k] = CharacteristicIndex(i) }
        var db = newDatabase
        let builtIn = GATTDatabase.BuiltIn.count
        for (old, key) in oldKeys.enumerated() where old >= builtIn {
            guard let new = newIndex[key], new.rawValue >= builtIn else { continue }
            let value = database.value(ofCharacteristic: CharacteristicIndex(old))
            let c = db[new]
            if value.count <= c.maxLength { db.setValue(value, at: c.valueHandle) }
        }
        for id in clients.keys {
            guard var b = clients[id] else { continue }
            var cccd: [CharacteristicIndex: UInt16] = [:]
            for (old, bits) in b.cccd where old.rawValue < oldKeys.count {
                guard let new = newIndex[oldKeys[old.rawValue]] else { continue }
                let p = db[new].properties
                let allowed: UInt16 = (p.canNotify ? 0x0001 : 0) | (p.canIndicate ? 0x0002 : 0)
                if bits & allowed != 0 { cccd[new] = bits & allowed }
            }
            b.cccd = cccd
            // A characteristic's updates keep their bearer (some may still be queued there).
            var updateChannels: [CharacteristicIndex: UInt16] = [:]
            for (old, ch) in b.updateChannels where old.rawValue < oldKeys.count {
                if let new = newIndex[oldKeys[old.rawValue]] { updateChannels[new] = ch }
            }
            b.updateChannels = updateChannels
            b.prepareQueue = []
            b.preparedBytes = 0
            clients[id] = b
        }
        for id in bearers.keys {
            guard var b = bearers[id] else { continue }
            if case .commit(let op, let writes)? = b.pending?.kind {
                b.pending?.kind = .commit(op, writes: Self.remap(writes, from: database, oldKeys, to: db, newIndex))
            }
            b.waitingIndications = []
            if let o = b.outstandingIndication {
                if o.characteristic.rawValue < oldKeys.count, let new = newIndex[oldKeys[o.characteristic.rawValue]] {
                    b.outstandingIndication = (new, o.deadline)
                } else {
                    b.outstandingIndication = (GATTDatabase.BuiltIn.serviceChanged.index, o.deadline)
                }
            }
            bearers[id] = b
        }
        database = db
        checkReady()
        out += takeOutputs()
        return out
    }

    /// A commit's writes (by handle in `old`) at the handles the same attributes have in `new`:
    /// a characteristic value or CCCD of the characteristic with the same key; anything else,
    /// or a value longer than the new maximum, is left out (applied to nothing).
    static func remap(
        _ writes: [(AttributeHandle, [UInt8])], from old: GATTDatabase, _ oldKeys: [String], to new: GATTDatabase, _ newIndex: [String: CharacteristicIndex]
    ) -> [(AttributeHandle, [UInt8])] {
        writes.compactMap { h, v in
            switch old.attribute(at: h)?.role {
            case .characteristicValue(let c)?:
                guard c.rawValue < oldKeys.count, let n = newIndex[oldKeys[c.rawValue]], v.count <= new[n].maxLength else { return nil }
                return (new[n].valueHandle, v)
            case .clientCharacteristicConfiguration(let c)?:
                guard c.rawValue < oldKeys.count, let n = newIndex[oldKeys[c.rawValue]], let cccd = new[n].cccdHandle else { return nil }
                return (cccd, v)
            default:
                return nil
            }
        }
    }

    /// A name for each characteristic that survives a reload: its config id,
    /// else "uuid#n" (n-th characteristic with that UUID).
    static func characteristicKeys(_ db: GATTDatabase) -> [String] {
        var seen: [BluetoothUUID: Int] = [:]
        return db.characteristics.map { c in
            if let id = c.id { return "id:" + id }
            let n = seen[c.uuid, default: 0]
            seen[c.uuid] = n + 1
            return "uuid:\(c.uuid)#\(n)"
        }
    }
}
