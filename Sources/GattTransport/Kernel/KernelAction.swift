import GattCore
import GattHost
import Logging

/// What the kernel transport's rules (`KernelAdapter`) ask its shell (`KernelPeripheralTransport`)
/// to do, in order: the shell only moves bytes and events. Sockets are named by id; what the
/// kernel answers comes back to the rules as an input, in a later turn.
enum KernelAction: Sendable {
    /// For the peripheral core (routed by the stack).
    case event(TransportEvent)
    /// A log line.
    case log(Logger.Level, String)
    /// Start reading an accepted bearer's socket (`bearer`): its PDUs come in with the
    /// security level of `securityFrom` (the link's ATT socket) read with each, and its send
    /// MTU when `readsMTU` (an Enhanced ATT channel the central may reconfigure); `captureHandle`:
    /// the connection handle its PDUs are recorded with (btsnoop), nil for none.
    case startReading(KernelSocketID, bearer: BearerID, securityFrom: KernelSocketID, readsMTU: Bool, captureHandle: UInt16?)
    /// One ATT PDU on a bearer's socket; once it is out, `.readyToSend` for the bearer.
    case write(KernelSocketID, [UInt8])
    /// Close a socket (a bearer's, or an accepted channel's nobody takes).
    case close(KernelSocketID)
    /// Read the socket's security level now (`securityRead` follows, in a later turn).
    case readSecurity(KernelSocketID)
    /// Raise the socket's BT_SECURITY: the kernel sends an SMP Security Request.
    case requestSecurity(KernelSocketID, SecurityLevel, ConnectionID, what: String, peer: BluetoothAddress)
    /// An accepted L2CAP channel of an app's server, kept for the daemon and reported on `connection`.
    case openChannel(KernelSocketID, server: L2CAPChannelServer, connection: ConnectionID, linkKnown: Bool)
    /// An HCI command on the raw socket; `answered` true: `commandAnswered` follows.
    case hci(HCICommand, answered: Bool, failure: String?)
    /// A reply on the pairing agent's mgmt socket.
    case pairingReply(KernelPairingPrompts.Command)
    /// A mgmt operation on the command thread, in `session`.
    case management(KernelManagementOperation, session: Int?)
    /// Listen for exactly these apps' channel servers, and for Enhanced ATT when `enhancedATT`
    /// (the adapter is open; `closeAdapter` closes the listening sockets).
    case listen(servers: [L2CAPChannelServer], enhancedATT: Bool)
    /// The adapter went: close the listening sockets and the controller's raw socket.
    case closeAdapter
}

/// A blocking mgmt operation the shell runs on its command thread.
enum KernelManagementOperation: Sendable {
    /// Set IO Capability, Bondable, Secure Connections (`securityApplied` follows with warnings).
    case applySecurity(KernelManagement.SecuritySettings)
    /// Load Long Term Keys and Identity Resolving Keys (`keysNotLoaded` follows a failure).
    case loadKeys(KernelKeySet)
    /// Unpair Device (`unpairFailed` follows a failure).
    case unpair(KernelBDAddress)
    /// Set Default System Configuration: the connection parameters the kernel asks centrals for.
    case setDefaultConnectionParameters(LEConnectionParameters)
    /// One advertising instance's operation (`advertisingFinished` follows).
    case advertising(KernelAdvertisingDriver.Operation, set: String)
}
