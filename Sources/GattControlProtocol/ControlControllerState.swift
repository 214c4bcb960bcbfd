/// Whether the controller can be used, as the `state` event and `status` report it: Core
/// Bluetooth's `CBManagerState` (`peripheralManagerDidUpdateState`) in the protocol's snake_case.
public enum ControlControllerState: String, Sendable, Equatable, CaseIterable {
    /// Not tried yet.
    case unknown
    /// Usable: advertising and connections work.
    case poweredOn = "powered_on"
    /// The adapter is down, blocked (rfkill) or not there; gattd waits for it to come back.
    case poweredOff = "powered_off"
    /// The controller went away or could not be reached; gattd opens it again with backoff.
    case resetting
    /// gattd lacks a capability (CAP_NET_ADMIN, CAP_NET_RAW) or permission for the device.
    case unauthorized
    /// It cannot be used this way (bluetoothd owns it, no Bluetooth in the kernel...).
    case unsupported
}

/// What happened to an advertising set (the `advertising` event; Core Bluetooth's
/// `peripheralManagerDidStartAdvertising(_:error:)` and its stop).
public enum ControlAdvertisingChange: String, Sendable, Equatable, CaseIterable {
    case started
    case stopped
    /// The controller or the kernel refused to start it (`reason` says why).
    case failed
}
