import GattControlProtocol
import GattCore
import GattTransport

/// What the daemon knows of its controller, kept while it is away: for `status`, for the
/// `state` events watchers see, and the limits advertising data and reloads are checked against.
struct KnownController {
    /// The address centrals saw last (`status` while the controller is away).
    private(set) var lastAddress: BluetoothAddress = .zero
    /// How the transport said it reaches the controller when it came up.
    private(set) var summary: String?
    /// What the last ready controller is and can do (nil: none reported yet).
    private(set) var info: ControllerInfo?
    /// Whether it can be used, and why not, as `state` events told watchers.
    private(set) var state: (state: ControlControllerState, reason: String?) = (.unknown, nil)

    /// A controller came up.
    mutating func ready(address: BluetoothAddress, description: String, info: ControllerInfo?) {
        lastAddress = address
        summary = description
        if let info { self.info = info }
    }

    /// The new state; false when it was that already (no event to send).
    mutating func set(_ state: ControlControllerState, reason: String?) -> Bool {
        guard self.state.state != state || self.state.reason != reason else { return false }
        self.state = (state, reason)
        return true
    }

    /// The `state` of an open that failed: waiting for the adapter is `powered_off`, retrying
    /// `resetting`, a missing capability `unauthorized`, the rest `unsupported`.
    static func state(for f: TransportOpenFailure) -> ControlControllerState {
        switch f.retry {
        case .whenAvailable: .poweredOff
        case .withBackoff: .resetting
        case .never(let exitCode): exitCode == 77 ? .unauthorized : .unsupported
        }
    }
}
