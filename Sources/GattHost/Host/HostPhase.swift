/// Where the host's bring-up stands (one value, not flags): reset and read the controller
/// (`Host.start`), ready for advertising and connections, or given up.
public enum HostPhase: Sendable, Equatable {
    /// Bring-up's commands are under way; `buffersKnown`: the controller's ACL buffers were
    /// read (bring-up ends when the commands queued after that are answered).
    case bringingUp(buffersKnown: Bool)
    /// Bring-up is complete.
    case ready
    /// After a `.fatal` event: the host sends nothing more until `start` again.
    case failed
}
