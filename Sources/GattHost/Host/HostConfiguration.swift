import GattCore

/// What the H4 host needs to know besides what the peripheral core tells it.
public struct HostConfiguration: Sendable {
    public var deviceName: String
    public var advertising: AdvertisingConfiguration
    /// A controller that does not answer a command within this time: the command is
    /// given up (optional ones) or the controller is reset (mandatory ones).
    public var commandTimeout: Duration = .seconds(5)
    /// Random static address to use when `advertising.ownAddressType == .random`
    /// (nil: derived from the controller's public address, see `Host.randomAddress`).
    public var randomAddress: BluetoothAddress?
    /// Ask each new connection for the maximum data length and 2M PHY, when the
    /// controller supports the commands and features.
    public var requestDataLengthAndPHY: Bool
    /// The Security Manager's settings; nil: no pairing (a Pairing Request gets
    /// Pairing Failed, Pairing Not Supported, and LTK requests only bonds' keys).
    public var security: SecurityManagerConfiguration?
    /// Our Identity Resolving Key (16 octets, little-endian; kept by the daemon): distributed
    /// with our identity address when a central bonds, and the key of our resolvable private
    /// addresses (`ownAddressType == .rpa`).
    public var localIRK: [UInt8]?
    public init(deviceName: String, advertising: AdvertisingConfiguration) {
        self.deviceName = deviceName
        self.advertising = advertising
        self.requestDataLengthAndPHY = advertising.requestDataLengthAndPHY
    }
}

extension HostConfiguration {
    /// A config's settings for the host: the device name, advertising and the Security Manager's.
    public init(_ configuration: GattConfiguration) {
        self.init(deviceName: configuration.name, advertising: configuration.advertising)
        security = configuration.security
    }
}
