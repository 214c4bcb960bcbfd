extension Peripheral {
    /// Switches to a new, already validated config without dropping connections.
    /// A different Database Hash rebuilds the ATT server with the new database (values of
    /// characteristics with the same id carry over) and indicates Service Changed
    /// (0x0001–0xFFFF) to subscribed centrals; otherwise only the GAP values (not part of
    /// the hash) are updated. New advertising payloads restart advertising with them.
    public mutating func reload(database new: GATTDatabase, payloads newPayloads: AdvertisingPayloads, maxConnections newMax: Int?, now: Duration) -> [PeripheralOutput] {
        var out: [PeripheralOutput] = []
        var outcome = ReloadOutcome(databaseHashes: nil, serviceChanged: nil, advertisingChanged: false)
        let old = database
        if old.databaseHash != new.databaseHash {
            out += absorb(att.replaceDatabase(new, now: now))
            let r = att.notify(characteristic: GATTDatabase.BuiltIn.serviceChanged.index, value: [0x01, 0x00, 0xFF, 0xFF], now: now)
            out += absorb(r.outputs)
            outcome.databaseHashes = (old.databaseHash, new.databaseHash)
            outcome.serviceChanged = r.result
        } else {
            for b in GATTDatabase.BuiltIn.gapValues where old.value(ofCharacteristic: b.index) != new.value(ofCharacteristic: b.index) {
                _ = att.setValue(characteristic: b.index, value: new.value(ofCharacteristic: b.index))
            }
        }
        maxConnections = newMax ?? Int.max
        if newPayloads != payloads {
            payloads = newPayloads
            outcome.advertisingChanged = true
            if advertising.isOnOrStarting, shouldAdvertise {
                advertising = .starting
                out.append(.setAdvertising(newPayloads))
            }
        }
        out += reconcileAdvertising()
        return out + [.event(.reloaded(outcome))]
    }
}
