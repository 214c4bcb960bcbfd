extension Peripheral {
    /// Switches to a new, already validated config without dropping connections.
    /// A different Database Hash rebuilds the ATT server with the new database (values of
    /// characteristics with the same id carry over) and indicates Service Changed
    /// (for the handles of the services that changed, §7.1) to subscribed centrals; otherwise only the GAP values (not part of
    /// the hash) are updated. New advertising payloads restart advertising with them.
    public mutating func reload(
        database new: GATTDatabase, payloads newPayloads: AdvertisingPayloads, otherSets newSets: [AdvertisingSet] = [], maxConnections newMax: Int?,
        now: Duration
    ) -> [PeripheralOutput] {
        var new = new
        new.setEnhancedATTSupported(database.enhancedATTSupported)  // `setEnhancedATT` decides it
        var out: [PeripheralOutput] = []
        var outcome = ReloadOutcome(databaseHashes: nil, serviceChanged: nil, advertisingChanged: false)
        let old = database
        if old.databaseHash != new.databaseHash {
            out += absorb(att.replaceDatabase(new, now: now))
            let range = GATTDatabase.changedRange(from: old.serviceFingerprints, to: new.serviceFingerprints) ?? .all
            let (result, indicated) = indicateDatabaseChanged(from: old.databaseHash, range: range, now: now)
            out += indicated
            outcome.databaseHashes = (old.databaseHash, new.databaseHash)
            outcome.serviceChanged = result
            outcome.changedRange = range
        } else {
            for b in GATTDatabase.BuiltIn.gapValues where old.value(ofCharacteristic: b.index) != new.value(ofCharacteristic: b.index) {
                _ = att.setValue(characteristic: b.index, value: new.value(ofCharacteristic: b.index))
            }
        }
        maxConnections = newMax ?? Int.max
        if sets.replace(.primary(newPayloads), advertisingConditions) {
            outcome.advertisingChanged = true
        }
        if sets.replaceOthers(newSets) { outcome.advertisingChanged = true }
        out += reconcileAdvertising()
        return out + [.event(.reloaded(outcome))]
    }
}
