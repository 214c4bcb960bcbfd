/// Who powers gattd's adapter, and so whether gattd powers it on as it opens: it does, unless
/// someone else (a user, rfkill) powered it off while gattd served; then gattd waits for them
/// to power it on again rather than fight them. bluetoothd powering its adapters off as it
/// exits is not someone else: a bluetoothd gone, or a new one (another unique bus name), lets
/// gattd power the adapter on again. Sans-I/O.
public struct BlueZAdapterPower: Sendable, Equatable {
    /// Someone powered the adapter off while gattd served.
    public private(set) var poweredOffByOthers = false
    /// bluetoothd's unique bus name when gattd last reached it.
    public private(set) var bluetoothdOwner: String?

    public init() {}

    /// bluetoothd's unique bus name as gattd opens (`GetNameOwner`).
    public mutating func bluetoothd(_ owner: String) {
        if owner != bluetoothdOwner { poweredOffByOthers = false }
        bluetoothdOwner = owner
    }

    /// bluetoothd is not running: its adapters' power-off was its exit.
    public mutating func bluetoothdGone() { poweredOffByOthers = false }

    /// The adapter was powered off while gattd served on it (by a user, rfkill, or bluetoothd
    /// stopping: which one, the next open's owner says).
    public mutating func poweredOff() { poweredOffByOthers = true }

    public enum Step: Sendable, Equatable {
        /// Powered: serve on it.
        case ready
        /// Power it on first (`Adapter1.Powered`).
        case powerOn
        /// Someone else powered it off: wait for them to power it on.
        case wait
    }

    /// The adapter as gattd found it opening.
    public mutating func opening(powered: Bool) -> Step {
        guard !powered else {
            poweredOffByOthers = false
            return .ready
        }
        return poweredOffByOthers ? .wait : .powerOn
    }
}
