import GattCore
import Logging
import GattTransport

/// The daemon's advertising policy: what programs change at run time (a set on or off, a
/// set's manufacturer and service data: `AdvertisingDataOverrides`, built by the config's
/// rules and checked against the controller's limits when they are known), what a reload and a
/// restart keep of it, and how the sets' going on and off the air is said (log lines, the
/// `advertising` control events). What of it lasts a restart is the restoration's to keep: the
/// daemon hands `updates` and the choices to `RestorationCoordinator`.
final class AdvertisingService {
    private unowned let context: DaemonContext
    /// Run-time advertising data over the config's, by set id.
    private var overrides = AdvertisingDataOverrides()
    /// Said once that the controller does not advertise while connected (until it does again).
    private var refusalLogged = false

    init(context: DaemonContext) { self.context = context }

    private var logger: Logger { context.logger }

    /// The run-time data of each set, as a restart would put it back.
    var updates: [String: AdvertisingDataUpdate] { overrides.updates }

    /// The config's `advertising_sets`, built (the loader validated them: a set that does not
    /// build is left out, with the rest).
    static func otherSets(_ configuration: GattConfiguration) -> [AdvertisingSet] {
        configuration.advertisingSets.compactMap { try? $0.build() }
    }

    // MARK: - On and off the air

    /// A set went on or off the air: its log line and control event.
    func changed(_ on: Bool, set: String) {
        if set != AdvertisingSet.primaryID {
            logger.info("advertising set \"\(set)\" \(on ? "on the air" : "stopped")")
        } else {
            PeripheralEventLog(logger: logger).advertising(on, context.core.payloads)
            if on { refusalLogged = false }
        }
        context.emit(.advertising(set: set, on ? .started : .stopped, reason: nil))
    }

    /// The controller refused a set. Many cannot advertise connectable while connected: that
    /// is said once, and advertising resumes after a disconnection.
    func refused(_ set: String, reason: String, whileConnected: Bool) {
        context.emit(.advertising(set: set, .failed, reason: reason))
        if set != AdvertisingSet.primaryID {
            logger.warning("cannot advertise set \"\(set)\": \(reason)")
        } else if whileConnected {
            if !refusalLogged { logger.info("the controller does not advertise while connected (\(reason)); advertising resumes after a disconnection") }
            refusalLogged = true
        } else {
            logger.warning("cannot start advertising: \(reason)")
        }
    }

    // MARK: - What programs change

    /// A program turns a set (nil: the primary one) on or off.
    func setWanted(_ enabled: Bool, set: String?) { context.process(context.core.setAdvertisingWanted(enabled, set: set)) }

    /// The `advertising_data` op: the set's data replaced, within `limits` when known.
    func setData(_ update: AdvertisingDataUpdate, set: String?, configuration: GattConfiguration, limits: AdvertisingLimits?) -> AdvertisingDataUpdateError? {
        let id = set ?? AdvertisingSet.primaryID
        let built: AdvertisingSet
        do {
            built = try overrides.update(set: id, with: update, in: configuration, limits: limits)
        } catch {
            return error
        }
        let outputs = context.core.replaceSet(built)
        if logger.logLevel <= .debug {
            logger.debug("advertising set \"\(id)\": new data \(AttributeValueLiteral.hexString(built.payloads.advertisingData)), scan response \(AttributeValueLiteral.hexString(built.payloads.scanResponseData))")
        }
        context.process(outputs)
        return nil
    }

    /// At start, on the core built for the config: the sets programs turned off stay off, and
    /// their run-time data comes back (data that no longer fits is dropped, with a line).
    /// Returns `saved` as it now is (sets the config no longer has, and such data, left out).
    func restore(_ saved: RestoredState, configuration: GattConfiguration) -> RestoredState {
        var state = saved
        let ids = Set(context.core.allSets.map(\.id))
        for id in saved.advertisingOff {
            guard ids.contains(id) else {
                state.setAdvertising(true, set: id)
                continue
            }
            _ = context.core.setAdvertisingWanted(false, set: id)
        }
        for (id, update) in saved.advertisingData.sorted(by: { $0.key < $1.key }) {
            do {
                _ = context.core.replaceSet(try overrides.update(set: id, with: update, in: configuration))
            } catch {
                logger.warning("run-time advertising data of set \"\(id)\" not restored: \(error)")
            }
        }
        state.advertisingData = overrides.updates
        return state
    }

    /// A reload's sets: the new config's, with the run-time data that carries over (a line in
    /// the log for data dropped because it no longer fits).
    func reloaded(from old: GattConfiguration, to new: GattConfiguration, payloads: AdvertisingPayloads, limits: AdvertisingLimits?) -> (AdvertisingPayloads, [AdvertisingSet]) {
        for line in overrides.reload(from: old, to: new, limits: limits) { logger.warning("\(line)") }
        let effective = overrides.applied(to: new)
        let primary = (try? effective.advertisingPayloads()) ?? payloads
        return (primary, Self.otherSets(effective))
    }
}
