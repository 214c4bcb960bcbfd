import GattCore

/// Something the H4 transport passes up or logs.
public enum HostEvent: Sendable, Equatable {
    /// Bring-up finished (also reported as `TransportEvent.ready`).
    /// (Indirect: a large, rare payload would make every value of the enum as large and as costly to copy.)
    indirect case controllerReady(ControllerInfo)
    /// For the peripheral core, above the seam.
    case transport(TransportEvent)
    /// A credit-based L2CAP channel, for the transport that pumps it (`CreditBasedChannels`).
    case channel(CreditBasedChannelEvent)
    /// A non-fatal problem worth a log line (malformed frame dropped, optional command refused…).
    case warning(String)
    /// The controller cannot be used any more (it stopped answering, bring-up failure,
    /// hardware error): the transport is dropped and opened again.
    case fatal(String)
}
