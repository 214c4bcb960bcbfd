/// A loaded config file (`ConfigLoader`): what the GATT server and advertiser need, and the
/// daemon's own settings.
public struct DaemonConfiguration: Sendable, Equatable {
    /// The services, advertising, security and channels: what `Peripheral` and the transports get.
    public var gatt: GattConfiguration
    /// State restoration, bond limits: what only the daemon reads.
    public var settings: DaemonSettings

    public init(gatt: GattConfiguration, settings: DaemonSettings = DaemonSettings()) {
        self.gatt = gatt
        self.settings = settings
    }
}
