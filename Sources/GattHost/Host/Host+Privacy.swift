import GattCore

// Our privacy on the H4 path (Core Spec Vol 6 Part B §1.3.2.2, Vol 3 Part C §10.7): the
// identity bonded centrals get (our IRK and identity address) and, with `own_address_type`
// "rpa", resolvable private addresses (`HostPrivacy`) renewed every `rpa_timeout_s`.
extension Host {
    /// The resolvable private address advertised now (`ownAddressType == .rpa`).
    public var privateAddress: BluetoothAddress? { privacy.address }

    /// The identity we distribute (Identity Information + Identity Address Information): our
    /// public address when we advertise with it, else the random static one (a private
    /// address is never an identity).
    func localIdentity(irk: [UInt8]) -> SMPIdentity {
        configuration.advertising.ownAddressType == .public
            ? SMPIdentity(irk: irk, address: controller.address, addressType: .public)
            : SMPIdentity(irk: irk, address: randomAddress, addressType: .random)
    }

    /// A new private address, used from now on, and when the next one is due.
    mutating func newPrivateAddress() -> BluetoothAddress {
        let irk = privacy.identityResolvingKey(&configuration.localIRK)
        return privacy.newAddress(irk: irk, now: now, timeout: configuration.advertising.rpaTimeout)
    }

    /// Renews the private address when its time is up. The controller refuses LE Set Random
    /// Address while advertising (Vol 4 Part E §7.8.4), and LE Set Advertising Set Random
    /// Address while a connectable set advertises (§7.8.52), so advertising pauses around
    /// it; while an advertising batch runs, the renewal waits a second.
    /// True when the renewal happened (commands may have been queued).
    mutating func renewPrivateAddressIfDue() -> Bool {
        guard isReady, configuration.advertising.ownAddressType == .rpa, privacy.isDue(now: now) else { return false }
        guard !advertising.isRunning else {
            privacy.postpone(until: now + .seconds(1))
            return false
        }
        commands.append(contentsOf: advertising.changeAddress(newPrivateAddress()))
        return true
    }
}
