import GattCore

/// The output of the Security Manager: a command to send on the SMP channel
/// (L2CAP CID 0x0006; `SMPCommand.encoded()` gives the payload) or an event.
public enum SecurityManagerOutput: Sendable, Equatable {
    case send(SMPCommand)
    case event(SecurityManagerEvent)
}
