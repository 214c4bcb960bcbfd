import GattControlProtocol
import GattCore
import GattTransport

// The controller's state as watchers see it (`state` events, `status`), and the advertising
// sets the daemon hands the core.
extension PeripheralDaemon {
    /// The `state` event for an open that failed: waiting for the adapter is `powered_off`,
    /// retrying `resetting`, a missing capability `unauthorized`, the rest `unsupported`.
    func setControllerState(for f: TransportOpenFailure) {
        switch f.retry {
        case .whenAvailable: setControllerState(.poweredOff, reason: f.message)
        case .withBackoff: setControllerState(.resetting, reason: f.message)
        case .never(let exitCode): setControllerState(exitCode == 77 ? .unauthorized : .unsupported, reason: f.message)
        }
    }

    func setControllerState(_ state: ControlControllerState, reason: String?) {
        guard controllerState.state != state || controllerState.reason != reason else { return }
        controllerState = (state, reason)
        controlEventHandler?(.state(state, reason: reason))
    }

    /// The config's `advertising_sets`, built (the loader validated them: a set that does not
    /// build is left out, with the rest).
    static func otherSets(_ configuration: GattConfiguration) -> [AdvertisingSet] {
        configuration.advertisingSets.compactMap { try? $0.build() }
    }
}
