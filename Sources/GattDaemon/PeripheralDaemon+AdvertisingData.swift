import GattCore
import GattTransport

// The `advertising_data` op and a reload's sets (`AdvertisingService`): a set's manufacturer and
// service data replaced while gattd runs. A reload keeps it unless the new config changes that
// field of that set; with state restoration a restart keeps it too (`restore.json`).
extension PeripheralDaemon {
    public func setAdvertisingData(_ update: AdvertisingDataUpdate, set: String?) -> AdvertisingDataUpdateError? {
        if let error = advertising.setData(update, set: set, configuration: configuration, limits: controller.limits) { return error }
        keepAdvertisingData()
        return nil
    }

    /// A reload's sets, within the controller's limits when known.
    func reloadedAdvertising(from old: GattConfiguration, to new: GattConfiguration, payloads: AdvertisingPayloads) -> (AdvertisingPayloads, [AdvertisingSet]) {
        advertising.reloaded(from: old, to: new, payloads: payloads, limits: controller.limits)
    }
}
