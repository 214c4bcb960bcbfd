import GattCore

/// Our resolvable private addresses on the H4 path (Core Spec Vol 6 Part B §1.3.2.2): the one
/// advertised now, when it is renewed, and where new ones (and an IRK, when none was given)
/// come from. `Host` decides when advertising may take a new one.
struct HostPrivacy: Sendable {
    /// The resolvable private address advertised now (`ownAddressType == .rpa`).
    private(set) var address: BluetoothAddress?
    /// When the private address is renewed next (nil: not renewing).
    private(set) var renewal: Duration?
    /// Source of private addresses (and of an IRK when none was given).
    private var random = SMPRandomSource(base: SystemRandomNumberGenerator())

    /// The IRK of our private addresses and identity: the `configured` one, else one made
    /// now and kept there for this run.
    mutating func identityResolvingKey(_ configured: inout [UInt8]?) -> [UInt8] {
        if let irk = configured { return irk }
        let irk = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        configured = irk
        return irk
    }

    /// A new private address from `irk`, used from now on, renewed after `timeout`.
    mutating func newAddress(irk: [UInt8], now: Duration, timeout: Duration) -> BluetoothAddress {
        let address = ResolvablePrivateAddress.make(irk: irk, using: &random)
        self.address = address
        renewal = now + timeout
        return address
    }

    /// Whether the renewal is due at `now`.
    func isDue(now: Duration) -> Bool { renewal.map { now >= $0 } ?? false }

    /// The renewal waits until `later` (advertising is busy).
    mutating func postpone(until later: Duration) { renewal = later }

    /// No more renewals (a public or static own address from now on).
    mutating func stopRenewing() { renewal = nil }
}
