import GattCore

/// Builds one `Bond` from the separate mgmt events a kernel pairing ends with. The kernel's
/// SMP reports a finished key distribution in this order (`smp_notify_keys`): New IRK (the
/// central's identity, with the RPA it used), New CSRK (the central's, then ours), New Long
/// Term Key for the key the central distributed (legacy, Central = 1), then New Long Term Key
/// for the key a peripheral encrypts with (our legacy key, or the P-256 key). The last one
/// completes the bond; a legacy pairing in which we distributed no key ends with the
/// central's key instead, and `finish` completes it.
struct KernelBondAssembler: Sendable {
    /// One pairing's outcome.
    struct Completed: Sendable, Equatable {
        var bond: Bond
        /// Whether to keep the bond (the kernel's Store_Hint: bonding was asked for and the
        /// address is an identity; never for debug keys, which the kernel does not reload).
        var bonded: Bool
        /// The resolvable private address the central paired with, when it gave its identity.
        var resolvablePrivateAddress: BluetoothAddress?
    }

    private struct Partial: Sendable {
        var irk: [UInt8]?
        var rpa: BluetoothAddress?
        var peerCSRK: [UInt8]?
        var localCSRK: [UInt8]?
        /// The central's legacy LTK (Central = 1), which says how the pairing went.
        var centralKey: (key: KernelLongTermKey, store: Bool)?
    }

    /// Keyed by identity address. Bounded: pairings are few and each ends with an LTK.
    private var partial: [KernelBDAddress: Partial] = [:]
    static let maxPartial = 16

    /// Takes one event; returns the bond it completes, if any. Prompts and other events are
    /// not its business (nil).
    mutating func add(_ event: KernelManagementEvent) -> Completed? {
        switch event {
        case .newIdentityResolvingKey(let key, let rpa, _):
            update(key.peer) {
                $0.irk = key.value
                $0.rpa = rpa
            }
            return nil
        case .newSignatureResolvingKey(let key, _):
            update(key.peer) { if key.isRemote { $0.peerCSRK = key.value } else { $0.localCSRK = key.value } }
            return nil
        case .newLongTermKey(let key, let store):
            let p2 = key.type == .unauthenticatedP256 || key.type == .authenticatedP256 || key.type == .debugP256
            if !p2 && key.central {
                update(key.peer) { $0.centralKey = (key, store) }
                return nil
            }
            let p = partial.removeValue(forKey: key.peer) ?? Partial()
            return completed(key.peer, p, key: key, store: store, hasPeripheralKey: true)
        default:
            return nil
        }
    }

    /// Completes a pairing that ended with the central's key only (no LTK of ours): a bond
    /// without `longTermKey`. Nil when the pairing already completed.
    mutating func finish(_ peer: KernelBDAddress) -> Completed? {
        guard let p = partial[peer], let central = p.centralKey else { return nil }
        partial[peer] = nil
        return completed(peer, p, key: central.key, store: central.store, hasPeripheralKey: false)
    }

    private mutating func update(_ peer: KernelBDAddress, _ change: (inout Partial) -> Void) {
        if partial[peer] == nil, partial.count >= Self.maxPartial { partial.removeAll() }
        change(&partial[peer, default: Partial()])
    }

    private func completed(_ peer: KernelBDAddress, _ p: Partial, key: KernelLongTermKey, store: Bool, hasPeripheralKey: Bool) -> Completed {
        let bond = KernelBondMapping.bond(
            peer: peer, key: key, hasPeripheralKey: hasPeripheralKey, irk: p.irk, peerCSRK: p.peerCSRK, localCSRK: p.localCSRK)
        return Completed(bond: bond, bonded: store && key.type != .debugP256, resolvablePrivateAddress: p.rpa)
    }
}
