import GattCore
import GattTransport

// The `advertising_data` op: a set's manufacturer and service data replaced while gattd runs,
// built by the config's rules and checked against the controller's limits when the transport
// knows them (`AdvertisingDataOverrides`). A reload keeps it unless the new config changes that
// field of that set; with state restoration a restart keeps it too (`restore.json`).
extension PeripheralDaemon {
    public func setAdvertisingData(_ update: AdvertisingDataUpdate, set: String?) -> AdvertisingDataUpdateError? {
        let id = set ?? AdvertisingSet.primaryID
        let built: AdvertisingSet
        do {
            built = try advertisingOverrides.update(set: id, with: update, in: configuration, limits: known.info?.limits)
        } catch {
            return error
        }
        let outputs = core.replaceSet(built)
        if logger.logLevel <= .debug {
            logger.debug("advertising set \"\(id)\": new data \(AttributeValueLiteral.hexString(built.payloads.advertisingData)), scan response \(AttributeValueLiteral.hexString(built.payloads.scanResponseData))")
        }
        process(outputs)
        keepAdvertisingData()
        return nil
    }

    /// A reload's sets: the new config's, with the run-time data that carries over (a line in
    /// the log for data dropped because it no longer fits).
    func reloadedAdvertising(from old: GattConfiguration, to new: GattConfiguration, payloads: AdvertisingPayloads) -> (AdvertisingPayloads, [AdvertisingSet]) {
        for line in advertisingOverrides.reload(from: old, to: new, limits: known.info?.limits) { logger.warning("\(line)") }
        let effective = advertisingOverrides.applied(to: new)
        let primary = (try? effective.advertisingPayloads()) ?? payloads
        return (primary, Self.otherSets(effective))
    }
}
