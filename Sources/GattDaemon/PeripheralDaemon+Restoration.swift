import GattCore
import Logging

// State restoration (`RestorationCoordinator`): what programs changed at run time comes back
// at start and after a reload, from `<state-dir>/restore.json`.
extension PeripheralDaemon {
    /// `config`'s services with the saved runtime services after them, each at its saved
    /// first handle when that is still free (else after the last handle: a log line says it
    /// moved); a saved service that no longer fits the database (an id the config now uses)
    /// is dropped with a warning. Returns the layout and the saved state as it now is.
    static func restoredLayout(
        _ config: GattConfiguration, _ saved: RestoredState, l2capChannels: [L2CAPChannelConfiguration], expander: (any ServiceExpander)?,
        logger: Logger
    ) -> (ServiceLayout, RestoredState, restored: Set<UInt16>) {
        var layout = ServiceLayout(config: config.services)
        var state = saved
        state.services = []
        var restored: Set<UInt16> = []
        for s in saved.services {
            let db = layout.database(deviceName: config.name, appearance: config.appearance)
            let name = s.id ?? "at \(AttributeHandle(s.start))"
            guard let json = try? JSONParser.parse(Array(s.definition.text.utf8)) else { continue }
            switch RuntimeService.parse(json, in: db, l2capChannels: l2capChannels, expander: expander) {
            case .failure(let errors):
                logger.warning("runtime service \(name) not restored: \(errors.lines().joined(separator: "; "))")
            case .success(let definition):
                do {
                    let start = try layout.add(definition, after: db, at: s.start)
                    if start != s.start {
                        logger.warning("runtime service \(name) restored at \(AttributeHandle(start)), not \(AttributeHandle(s.start)): the config's services now reach past it")
                    }
                    state.services.append(.init(start: start, definition: s.definition, id: s.id))
                    restored.insert(start)
                } catch {
                    logger.warning("runtime service \(name) not restored: \(describe(error))")
                }
            }
        }
        return (layout, state, restored)
    }

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
