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

/// The controller's identity, read during bring-up and logged once.
public struct ControllerInfo: Sendable, Equatable {
    public var address: BluetoothAddress = .zero
    public var version: HCILocalVersionInformation?
    public var leFeatures: LEFeatures = []
    public var aclDataPacketLength = 27
    public var totalACLDataPackets = 1
    /// The advertising commands the host uses with it until the next reset.
    public var advertisingCommands: AdvertisingCommandSet = .legacy

    /// Whether several advertising sets take turns on this controller (legacy advertising:
    /// one advertiser) rather than being on the air together (extended advertising).
    public var advertisingSetsTakeTurns: Bool { advertisingCommands == .legacy }

    /// One line for the log: address, version, LE ACL buffers, advertising.
    public var summary: String {
        let v = version.map { "HCI \($0.hciVersion)/LMP \($0.lmpVersion), company \($0.companyIdentifier)" } ?? "unknown version"
        return "\(address): \(v), LE ACL \(aclDataPacketLength) bytes x \(totalACLDataPackets), \(advertisingCommands)"
    }
}

/// The advertising commands the host gives a controller until its next reset: legacy or
/// extended, never both (Core Spec Vol 4 Part E §3.1.1).
public enum AdvertisingCommandSet: Sendable, Equatable, CustomStringConvertible {
    /// LE Set Advertising Parameters/Data/Scan Response Data/Enable (§7.8.5–§7.8.9).
    case legacy
    /// Advertising sets (§7.8.52–§7.8.60): LE Extended Advertising (LE feature bit 12) and
    /// its commands. `sets`: LE Read Number of Supported Advertising Sets;
    /// `maximumDataLength`: LE Read Maximum Advertising Data Length (octets per set).
    case extended(sets: Int, maximumDataLength: Int)

    public var description: String {
        switch self {
        case .legacy: "legacy advertising"
        case .extended(let sets, let length): "extended advertising (\(sets) sets, \(length) bytes of data per set)"
        }
    }
}

/// A live LE connection as the host sees it.
public struct HostConnection: Sendable, Equatable {
    public let handle: UInt16
    public let peerAddress: BluetoothAddress
    public let peerAddressType: BluetoothAddressType
    public var security: SecurityLevel = .low
    /// The encryption key size in octets while encrypted, when known.
    public var keySize: Int?
    /// What the key the last LE Long Term Key Request was answered with gives the link.
    var pendingSecurity: SMPLinkSecurity?
    public var id: ConnectionID { ConnectionID(handle) }
}

/// Something the H4 transport passes up or logs.
public enum HostEvent: Sendable, Equatable {
    /// Bring-up finished (also reported as `TransportEvent.ready`).
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case controllerReady(ControllerInfo)
    /// For the peripheral core, above the seam.
    case transport(TransportEvent)
    /// A non-fatal problem worth a log line (malformed frame dropped, optional command refused…).
    case warning(String)
    /// The controller cannot be used any more (it stopped answering, bring-up failure,
    /// hardware error): the transport is dropped and opened again.
    case fatal(String)
}

/// What a host call asks the I/O shell to do.
public enum HostOutput: Sendable, Equatable {
    /// Write this packet to the controller.
    case send(H4Packet)
    case event(HostEvent)
}
