/// What a config file says to the daemon rather than to the GATT server: read with the rest
/// of the file (one pass, one error list in document order), acted on only by GattDaemon.
public struct DaemonSettings: Sendable, Equatable {
    /// `state_restoration`: runtime services and advertising choices come back after a
    /// restart (with a state directory); false: the config file is the only truth.
    public var stateRestoration = true
    /// `security.max_bonds`: the oldest bonds are evicted beyond it (nil: no limit).
    public var maxBonds: Int?
    /// `security.restore_without_encryption`: a bonded central recognised by an RPA its IRK
    /// resolves gets its subscriptions back when it connects, before it encrypts.
    public var restoreWithoutEncryption = false

    public init() {}
}
