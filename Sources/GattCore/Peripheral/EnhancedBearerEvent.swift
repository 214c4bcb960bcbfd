/// How one Enhanced ATT bearer (Vol 3 Part F §3.2.11), an L2CAP Enhanced Credit Based Flow
/// Control channel on PSM 0x0027 a central opened, comes and goes. Its PDUs and readiness are
/// every bearer's events (`TransportEvent.received`, `.readyToSend`); the unenhanced bearer
/// comes and goes with its connection.
public enum EnhancedBearerEvent: Sendable, Equatable {
    /// The channel was accepted; `mtu` = min(our MTU, the central's MTU), the bearer's ATT_MTU.
    case opened(mtu: Int)
    /// L2CAP Credit Based Reconfigure (Vol 3 Part A §4.27; the MTU only grows).
    case reconfigured(mtu: Int)
    /// The channel is gone (either side closed it, or its link).
    case closed
}
