/// What the host needs to know besides the GATT database.
public struct HostConfiguration: Sendable {
    public var deviceName: String
    public var advertising: AdvertisingConfiguration
    /// A controller that does not answer a command within this time is an error.
    public var commandTimeout: Duration = .seconds(5)
    /// Random static address to use when `advertising.ownAddressType == .random`
    /// (nil: derived from the controller's public address, see `Host.randomAddress`).
    public var randomAddress: BluetoothAddress?
    /// Ask each new connection for the maximum data length and 2M PHY when supported.
    public var requestDataLengthAndPHY = true
    public init(deviceName: String, advertising: AdvertisingConfiguration) {
        self.deviceName = deviceName
        self.advertising = advertising
    }
}

/// The controller's identity, read during bring-up and logged once.
public struct ControllerInfo: Sendable, Equatable {
    public var address: BluetoothAddress = .zero
    public var version: HCILocalVersionInformation?
    public var leFeatures: LEFeatures = []
    public var aclDataPacketLength = 27
    public var totalACLDataPackets = 1
}

/// A live LE connection as the host sees it.
public struct HostConnection: Sendable, Equatable {
    public let handle: UInt16
    public let peerAddress: BluetoothAddress
    public let peerAddressType: BluetoothAddressType
    public var security: SecurityLevel = .low
    public var id: ConnectionID { ConnectionID(handle) }
}

/// Something the daemon logs or forwards to control clients.
public enum HostEvent: Sendable, Equatable {
    /// Bring-up finished; advertising is being enabled.
    case controllerReady(ControllerInfo)
    case advertisingChanged(Bool)
    case connected(HostConnection)
    case disconnected(HostConnection, reason: HCIStatus)
    case att(ATTServerEvent)
    /// A non-fatal problem worth a log line (malformed frame dropped, optional command refused…).
    case warning(String)
    /// The controller cannot be used any more (command timeout, bring-up failure,
    /// hardware error): the daemon drops the transport and starts over.
    case fatal(String)
}

/// What a host call asks the I/O shell to do.
public enum HostOutput: Sendable, Equatable {
    /// Write this packet to the controller.
    case send(H4Packet)
    case event(HostEvent)
}
