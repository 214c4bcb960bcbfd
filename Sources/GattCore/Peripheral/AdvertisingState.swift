/// Where the peripheral's advertising stands (the core's advertising policy). What is
/// *wanted* comes from the `advertise` control op; whether it is *possible* from the
/// transport, `max_connections` and the controller's answers.
public enum AdvertisingState: Sendable, Equatable {
    /// No controller: nothing can be advertised.
    case noController
    /// Not advertising, and not asked to (not wanted, connection limit, stopping).
    case idle
    /// The transport was asked to advertise and has not confirmed yet.
    case starting
    case advertising
    /// The transport was asked to stop and has not confirmed yet.
    case stopping
    /// The controller refused to advertise while connected: asked again after a disconnection.
    case refusedWhileConnected

    /// Whether the transport is (or is being made) advertising.
    var isOnOrStarting: Bool { self == .starting || self == .advertising }
}
