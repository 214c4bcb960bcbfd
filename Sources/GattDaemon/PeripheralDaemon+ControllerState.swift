import GattControlProtocol
import GattCore
import GattTransport

// The controller's state as watchers see it (`state` events, `status`), what it can do, and the
// advertising sets the daemon hands the core.
extension PeripheralDaemon {
    func controllerReady(address: BluetoothAddress, description: String, controller: ControllerInfo?) {
        known.ready(address: address, description: description, info: controller)
        logger.info("controller \(description)")
        if let controller {
            let sets = core.allSets.count
            if sets > 1, controller.limits.setsTakeTurns {
                logger.notice("the \(sets) advertising sets take turns on the air: the controller has one legacy advertising set (no LE Extended Advertising)")
            }
        }
        setControllerState(.poweredOn, reason: nil)
    }

    /// Whether the config's advertising sets fit a ready controller (`AdvertisingLimits`). The
    /// first controller since the start decides whether the config can be served at all: what
    /// does not fit is a config error, as an invalid config is (exit 65, each violation
    /// naming the set's path and the bytes), and the core never sees that controller. A later
    /// one (a dongle swapped) only has the sets that do not fit refused, each said once here
    /// and in an `advertising` event from the transport.
    func advertisingSetsFit(_ c: ControllerInfo, description: String) -> Bool {
        let violations = c.limits.violations(of: core.allSets)
        guard !violations.isEmpty else { return true }
        guard known.info == nil, let onFatalError else {
            for v in violations { logger.error("\(configurationName)\(v); that set stays off the air") }
            return true
        }
        logger.info("controller \(description)")
        let lines = violations.map { "\(configurationName)\($0)" }
        for l in lines { logger.error("\(l)") }
        let n = violations.count
        onFatalError(DaemonRunner.Failure(
            "the controller cannot advertise the config's advertising sets (\(n) error\(n == 1 ? "" : "s") above); exiting",
            exitCode: 65))
        return false
    }

    /// Why a reload's advertising sets do not fit the controller gattd has (nil: they fit, or
    /// no controller was ready yet).
    func advertisingLimitsRefusal(of new: GattConfiguration, payloads: AdvertisingPayloads) -> String? {
        guard let controller = known.info else { return nil }
        let sets = [AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: payloads)] + AdvertisingService.otherSets(new)
        let violations = controller.limits.violations(of: sets)
        return violations.isEmpty ? nil : violations.map { "\($0)" }.joined(separator: "; ")
    }

    /// "gattd.json: " before a config path, when the daemon knows the file.
    private var configurationName: String { options.configName.map { "\($0): " } ?? "" }

    /// The `state` event for an open that failed (`KnownController.state(for:)`).
    func setControllerState(for f: TransportOpenFailure) { setControllerState(KnownController.state(for: f), reason: f.message) }

    func setControllerState(_ state: ControlControllerState, reason: String?) {
        guard known.set(state, reason: reason) else { return }
        controlEventHandler?(.state(state, reason: reason))
    }
}
