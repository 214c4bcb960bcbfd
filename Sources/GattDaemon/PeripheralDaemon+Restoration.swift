import GattCore
import Logging

// State restoration (`RestorationCoordinator`): what programs changed at run time comes back
// at start and after a reload, from `<state-dir>/restore.json`.
extension PeripheralDaemon {
    /// At start, on the core built for the config: the sets programs turned off stay off, and
    /// their run-time advertising data comes back (data that no longer fits is dropped, with a line).
    func restoreAdvertising(_ saved: RestoredState) {
        let state = advertising.restore(saved, configuration: configuration)
        if !saved.isEmpty {
            let off = state.advertisingOff.count, data = state.advertisingData.count
            logger.info("restored \(state.services.count) runtime service\(state.services.count == 1 ? "" : "s"), \(off) set\(off == 1 ? "" : "s") turned off, run-time data of \(data) set\(data == 1 ? "" : "s")")
        }
        restoration.keep(state, what: "the restored state")
    }

    /// A program turned a set on or off: kept for a restart.
    func keepAdvertisingChoice(_ on: Bool, set: String?) {
        var state = restoration.state
        state.setAdvertising(on, set: set ?? AdvertisingSet.primaryID)
        restoration.keep(state, what: "advertising \(on ? "on" : "off")")
    }

    /// Run-time advertising data changed (the op, or a reload that dropped some): kept for a restart.
    func keepAdvertisingData() {
        var state = restoration.state
        state.advertisingData = advertising.updates
        restoration.keep(state, what: "the run-time advertising data")
    }
}
