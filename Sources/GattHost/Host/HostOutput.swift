import GattCore

/// What a host call asks the I/O shell to do.
public enum HostOutput: Sendable, Equatable {
    /// Write this packet to the controller.
    case send(H4Packet)
    case event(HostEvent)
}
