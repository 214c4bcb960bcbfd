import GattControlProtocol
import GattCore

/// What programs changed on the control socket that gattd puts back after a restart or a
/// SIGHUP (state restoration, as Core Bluetooth's `peripheralManager(_:willRestoreState:)`):
/// the services added with `add_service` at their handles, the sets turned off with
/// `advertise`, and each set's run-time `advertising_data`. Not kept: values `set` on
/// characteristics without `"persist": true`, connections, subscriptions of centrals without
/// a bond (bonds keep theirs), config services removed at run time (the config brings them back).
struct RestoredState: Equatable {
    /// A service added at run time: the `add_service` object as the program sent it, and
    /// its first handle.
    struct Service: Equatable {
        var start: UInt16
        var definition: JSONText
        /// The service's config id, when it has one (`remove_service` names it).
        var id: String?
    }

    var services: [Service] = []
    /// Sets a program turned off (`AdvertisingSet.primaryID` for the config's `advertising`).
    var advertisingOff: [String] = []
    /// Run-time advertising data by set id.
    var advertisingData: [String: AdvertisingDataUpdate] = [:]

    var isEmpty: Bool { services.isEmpty && advertisingOff.isEmpty && advertisingData.isEmpty }

    mutating func setAdvertising(_ on: Bool, set id: String) {
        advertisingOff.removeAll { $0 == id }
        if !on { advertisingOff.append(id) }
    }
}
