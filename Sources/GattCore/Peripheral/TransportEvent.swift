/// A central as a transport reports it when its link comes up.
public struct TransportPeer: Sendable, Equatable {
    public var address: BluetoothAddress
    public var addressType: BluetoothAddressType
    /// The LE connection handle, when the transport knows it (for logs).
    public var handle: UInt16?
    public var security: SecurityLevel

    public init(address: BluetoothAddress, addressType: BluetoothAddressType, handle: UInt16? = nil, security: SecurityLevel = .low) {
        self.address = address
        self.addressType = addressType
        self.handle = handle
        self.security = security
    }
}

/// What a `PeripheralTransport` reports to the peripheral core: the only input the
/// core takes from below the seam. Transports assign the `ConnectionID`s.
public enum TransportEvent: Sendable, Equatable {
    /// The controller is up and usable; `address` is the one centrals see,
    /// `description` a one-line identity for the log, `controller` what it is and can do
    /// (when the transport knows: the limits advertising sets are checked against).
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case ready(address: BluetoothAddress, description: String, controller: ControllerInfo? = nil)
    /// The controller went away (transport closed, adapter down, fatal error): every
    /// connection is gone. The daemon opens the transport again.
    case lost(reason: String)
    case connected(ConnectionID, TransportPeer)
    /// `detail`: what the log says when it says more than `reason`.
    case disconnected(ConnectionID, reason: HCIStatus, detail: String? = nil)
    /// `keySize`: the encryption key size in octets (7–16), when the transport knows it.
    case securityChanged(ConnectionID, SecurityLevel, keySize: Int? = nil)
    /// A pairing prompt, failure, timeout or completion on this link (a bonded
    /// completion carries the bond for the store: `.pairingComplete(bond, bonded: true)`).
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case pairing(ConnectionID, SecurityManagerEvent)
    /// One ATT PDU from the central on one of its bearers (`BearerID.fixed` for the
    /// unenhanced bearer).
    case received(BearerID, [UInt8])
    /// The transport can take one more ATT PDU on this bearer (backpressure: the core sends
    /// exactly one PDU per `readyToSend`).
    case readyToSend(BearerID)
    /// The controller started or stopped advertising `set` (a connection stops a connectable set too).
    case advertisingChanged(Bool, set: String = AdvertisingSet.primaryID)
    /// The controller refused to start advertising; `whileConnected`: it cannot
    /// advertise while a central is connected (asked again after a disconnection).
    case advertisingRefused(whileConnected: Bool, reason: String, set: String = AdvertisingSet.primaryID)
    /// A central opened an L2CAP channel to one of the servers `setL2CAPChannelServers`
    /// named; the transport keeps its socket until it is taken with `channel.ticket`.
    case l2capChannelOpened(ConnectionID, L2CAPChannelOpened)
    /// An Enhanced ATT bearer opened, was reconfigured or closed (`BearerID.channel`: the
    /// L2CAP channel's local CID). The unenhanced bearer has no such events: it opens with
    /// its connection (`.connected`) and closes with it (`.disconnected`).
    case enhancedBearer(BearerID, EnhancedBearerEvent)
    /// The link's parameters, PHYs or data length changed (reported after `.connected` with
    /// what the transport knows of the new link; nil fields: not known).
    case linkChanged(ConnectionID, LinkParameters)
    /// A `LinkRequest` (`BelowSeam.requestLink`) ended: carried out or refused.
    case linkRequestFinished(ConnectionID, LinkRequestKind, LinkRequestResult)
    /// A back end that runs ATT itself (bluetoothd) asks one GATT-level read or write of a
    /// central; `.answerGATT` answers it (`ATTServer.access(_:id:from:now:)`).
    case gattAccess(ConnectionID, GATTAccessID, GATTAccess)
    /// Such a back end has subscribers for the characteristic whose value handle this is, or
    /// no more: its updates go to it as `.updateGATT`.
    case gattSubscribers(AttributeHandle, Bool)
    /// Such a back end's central confirmed an indication of the characteristic whose value
    /// handle this is (BlueZ's `Confirm`).
    case gattConfirmed(ConnectionID, AttributeHandle)
    /// Something worth a log line that changes nothing (malformed packet dropped...).
    case warning(String)
}
