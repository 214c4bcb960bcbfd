/// Each characteristic of an old database to the one of a new database with the same key (a
/// name for a characteristic that survives a reload: its config id, else its UUID with its
/// occurrence number), for what a client keeps across a reload or a reconnection: CCCDs
/// (Vol 3 Part G §3.3.3.3), the bearer its updates take, a commit's writes.
struct CharacteristicKeyMap: Sendable {
    /// The old database's keys, by characteristic index.
    let oldKeys: [String]
    /// The new database's characteristics by key.
    let newIndex: [String: CharacteristicIndex]

    init(from old: GATTDatabase, to new: GATTDatabase) {
        oldKeys = Self.keys(old)
        newIndex = Self.index(new)
    }

    /// The characteristic of the new database with old characteristic `c`'s key.
    subscript(_ c: CharacteristicIndex) -> CharacteristicIndex? {
        c.rawValue < oldKeys.count ? newIndex[oldKeys[c.rawValue]] : nil
    }

    /// A name for each characteristic that survives a reload: its config id,
    /// else "uuid#n" (n-th characteristic with that UUID).
    static func keys(_ db: GATTDatabase) -> [String] {
        var seen: [BluetoothUUID: Int] = [:]
        return db.characteristics.map { c in
            if let id = c.id { return "id:" + id }
            let n = seen[c.uuid, default: 0]
            seen[c.uuid] = n + 1
            return "uuid:\(c.uuid)#\(n)"
        }
    }

    /// The characteristics of `db` by key.
    static func index(_ db: GATTDatabase) -> [String: CharacteristicIndex] {
        var index: [String: CharacteristicIndex] = [:]
        for (i, k) in keys(db).enumerated() { index[k] = CharacteristicIndex(i) }
        return index
    }

    /// Stored values of user characteristics carry over to the new characteristic with the
    /// same key when they fit its maximum length (built-in GAP/GATT values come from `new`).
    func carryValues(from old: GATTDatabase, into new: inout GATTDatabase) {
        let builtIn = GATTDatabase.BuiltIn.count
        for c in oldKeys.indices where c >= builtIn {
            guard let n = self[CharacteristicIndex(c)], n.rawValue >= builtIn else { continue }
            let value = old.value(ofCharacteristic: CharacteristicIndex(c))
            let target = new[n]
            if value.count <= target.maxLength { new.setValue(value, at: target.valueHandle) }
        }
    }

    /// CCCD bits by old characteristic, by new one: those the new characteristic still supports.
    func cccd(_ old: [CharacteristicIndex: UInt16], in new: GATTDatabase) -> [CharacteristicIndex: UInt16] {
        var cccd: [CharacteristicIndex: UInt16] = [:]
        for (c, bits) in old {
            guard let n = self[c] else { continue }
            let allowed = ATTClient.cccdBits(bits, allowedBy: new[n].properties)
            if allowed != 0 { cccd[n] = allowed }
        }
        return cccd
    }

    /// A commit's writes (by handle in `old`) at the handles the same attributes have in `new`:
    /// a characteristic value or CCCD of the characteristic with the same key; anything else,
    /// or a value longer than the new maximum, is left out (applied to nothing).
    func writes(_ writes: [(AttributeHandle, [UInt8])], from old: GATTDatabase, to new: GATTDatabase) -> [(AttributeHandle, [UInt8])] {
        writes.compactMap { h, v in
            switch old.attribute(at: h)?.role {
            case .characteristicValue(let c)?:
                guard let n = self[c], v.count <= new[n].maxLength else { return nil }
                return (new[n].valueHandle, v)
            case .clientCharacteristicConfiguration(let c)?:
                guard let n = self[c], let cccd = new[n].cccdHandle else { return nil }
                return (cccd, v)
            default:
                return nil
            }
        }
    }
}
