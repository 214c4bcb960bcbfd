/// A connected central as the peripheral core keeps it (the one connection table).
public struct PeripheralConnection: Sendable, Equatable {
    public let id: ConnectionID
    public let address: BluetoothAddress
    public let addressType: BluetoothAddressType
    /// The LE connection handle, when the transport knows it.
    public let handle: UInt16?
    public var security: SecurityLevel
    /// What the transport reported of the link (`TransportEvent.linkChanged`).
    public var link = LinkParameters()
    /// Security was asked for once already (after Insufficient Encryption/Authentication).
    var securityRequested = false

    public init(id: ConnectionID, peer: TransportPeer) {
        self.id = id
        self.address = peer.address
        self.addressType = peer.addressType
        self.handle = peer.handle
        self.security = peer.security
    }
}

/// What the core asks its transport to do.
public enum PeripheralOutput: Sendable, Equatable {
    /// Send one ATT PDU on a bearer (only after a `.readyToSend` for that bearer).
    case send(BearerID, [UInt8])
    /// Close an Enhanced ATT bearer's channel (L2CAP Disconnection Request); the link stays.
    case closeEnhancedBearer(BearerID)
    /// Advertise exactly these sets (reconfiguring those whose payloads changed); a set not
    /// listed stops. Empty: advertise nothing.
    case setAdvertising([AdvertisingSet])
    case disconnect(ConnectionID, reason: HCIStatus)
    /// Ask the central to pair or encrypt: the server refused a request with `reason`
    /// (Insufficient Encryption or Authentication).
    case requestSecurity(ConnectionID, SecurityLevel, reason: ATTError)
    /// The answer to a `.gattAccess`: the value read (from its offset), an empty success for
    /// a write, or the ATT error.
    case answerGATT(GATTAccessID, Result<[UInt8], ATTError>)
    /// A characteristic with GATT-level subscribers (`.gattSubscribers`) got this value: the
    /// back end notifies or indicates it to them.
    case updateGATT(AttributeHandle, [UInt8])
    case event(PeripheralEvent)
}

/// What a config reload changed (`Peripheral.reload`).
public struct ReloadOutcome: Sendable, Equatable {
    /// Old and new Database Hash when the database changed; nil when it did not.
    public var databaseHashes: (old: [UInt8], new: [UInt8])?
    /// The Service Changed indication's result (when the database changed).
    public var serviceChanged: NotifyResult?
    public var advertisingChanged: Bool
    /// The handles a Service Changed covers (when the database changed).
    public var changedRange: HandleRange? = nil

    public static func == (a: Self, b: Self) -> Bool {
        a.databaseHashes?.old == b.databaseHashes?.old && a.databaseHashes?.new == b.databaseHashes?.new
            && a.serviceChanged == b.serviceChanged && a.advertisingChanged == b.advertisingChanged
            && a.changedRange == b.changedRange
    }
}
