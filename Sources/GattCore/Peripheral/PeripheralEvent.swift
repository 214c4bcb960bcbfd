/// What happened, for the daemon's log lines, control events, persistence and systemd.
public enum PeripheralEvent: Sendable, Equatable {
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case controllerReady(address: BluetoothAddress, description: String, controller: ControllerInfo? = nil)
    case controllerLost(reason: String)
    case advertisingChanged(Bool, set: String = AdvertisingSet.primaryID)
    case advertisingRefused(whileConnected: Bool, reason: String, set: String = AdvertisingSet.primaryID)
    case connected(PeripheralConnection)
    case disconnected(PeripheralConnection, reason: HCIStatus, detail: String?)
    case securityChanged(PeripheralConnection)
    /// The link's parameters, PHYs or data length changed (`connection.link`).
    case linkChanged(PeripheralConnection)
    /// A `LinkRequest` on this central's link ended.
    case linkRequestFinished(PeripheralConnection, LinkRequestKind, LinkRequestResult)
    /// A pairing prompt or result for this central (answer prompts through the transport).
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case pairing(PeripheralConnection, SecurityManagerEvent)
    /// An ATT server event; `central` is the address of the connection it names, if any.
    case att(ATTServerEvent, central: BluetoothAddress?)
    case reloaded(ReloadOutcome)
    /// A central opened an app's L2CAP channel (`central`: nil when the transport names a
    /// connection the core does not know); whoever handles it takes its socket from the transport (`channel.ticket`).
    case l2capChannel(L2CAPChannelOpened, central: PeripheralConnection?)
    case warning(String)
}
