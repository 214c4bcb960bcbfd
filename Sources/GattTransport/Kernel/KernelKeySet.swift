import GattCore

/// The key records the kernel holds (or is to hold) for the adapter, as Load Long Term Keys
/// and Load Identity Resolving Keys carry them.
struct KernelKeySet: Sendable, Equatable {
    var longTermKeys: [KernelLongTermKey] = []
    var identityResolvingKeys: [KernelIdentityResolvingKey] = []
    /// Bonds left out (their address is not an identity address).
    var skipped: [BluetoothAddress] = []

    /// Whether the kernel holding `self` holds exactly the keys of `other` (order aside).
    func holdsSameKeys(as other: KernelKeySet) -> Bool {
        Set(longTermKeys) == Set(other.longTermKeys) && Set(identityResolvingKeys) == Set(other.identityResolvingKeys)
    }

    /// The kernel added a pairing's keys: they replace any earlier ones of the same device.
    mutating func add(_ bond: Bond) {
        let peer = KernelBondMapping.peer(of: bond)
        remove(peer)
        let added = KernelBondMapping.keys(for: [bond])
        longTermKeys += added.longTermKeys
        identityResolvingKeys += added.identityResolvingKeys
    }

    /// Unpair Device removed the device's keys.
    mutating func remove(_ peer: KernelBDAddress) {
        longTermKeys.removeAll { $0.peer == peer }
        identityResolvingKeys.removeAll { $0.peer == peer }
    }
}
