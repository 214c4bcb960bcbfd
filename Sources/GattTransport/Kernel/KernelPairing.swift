import GattCore

/// Pairing on the kernel transport, as rules (sans I/O): the kernel pairs (its SMP), mgmt
/// tells the keys and asks the questions, the bond store's bonds are loaded into the kernel.
/// The `security` settings, the questions waiting for the daemon's answers, a pairing's keys
/// being merged into a bond, and what the kernel holds. Part of `KernelAdapter`, which passes
/// in the links (to name a central's connection), the session and its timers.
struct KernelPairing: Sendable {
    /// The `security` settings given to the kernel's SMP at every open (and on reload).
    private(set) var settings: KernelManagement.SecuritySettings
    /// The security warnings logged since `settings` last changed.
    private var warnings: Set<String> = []
    /// The bond store's bonds, loaded into the kernel at every open.
    private var bonds: [Bond] = []
    /// The keys the kernel holds as far as gattd knows (loaded, or reported by the kernel
    /// since); nil when unknown (not loaded yet, adapter gone): the next load sends all.
    var kernelKeys: KernelKeySet?
    /// Merges a pairing's key events into one bond.
    private var bondAssembler = KernelBondAssembler()
    /// Pairing questions from the kernel waiting for the daemon's answer, by connection.
    private var prompts = KernelPairingPrompts()

    init(settings: KernelManagement.SecuritySettings) {
        self.settings = settings
    }

    /// Reload: true when the settings changed (apply them; their warnings are said again).
    mutating func reconfigure(_ new: KernelManagement.SecuritySettings) -> Bool {
        guard new != settings else { return false }
        settings = new
        warnings = []
        return true
    }

    /// Warnings of an applied setting, each logged once (again after a reload that changes
    /// `security`), not at every open of the adapter.
    mutating func applied(warnings new: [String], adapter: String) -> [KernelAction] {
        new.filter { warnings.insert($0).inserted }.map { .log(.warning, "\(adapter): \($0)") }
    }

    /// What the pairing agent's mgmt socket reported.
    mutating func managementEvent(_ event: KernelManagementEvent, links: KernelLinkTable, now: Duration, timers: inout KernelTimers) -> [KernelAction] {
        var out: [KernelAction] = []
        switch event {
        case .userConfirmationRequest(let peer, _, let value):
            // Just Works (Confirm_Hint 1) is answered by the agent itself: this is numeric comparison.
            prompt(.confirmation(peer), .numericComparison(value), peer, links, &out)
        case .userPasskeyRequest(let peer):
            prompt(.passkey(peer), .passkeyRequest, peer, links, &out)
        case .passkeyNotify(let peer, let passkey, let entered):
            // Entered > 0: the central's keypresses, not a new passkey.
            guard entered == 0, let id = links.connection(of: peer.address) else { break }
            out.append(.event(.pairing(id, .displayPasskey(passkey))))
        case .authenticationFailed(let peer, let status):
            out.append(.log(.info, "pairing with \(peer.address) failed (the kernel's mgmt status 0x\(String(status, radix: 16)))"))
            guard let id = links.connection(of: peer.address) else { break }
            prompts.ended(id)
            out.append(.event(.pairing(id, .pairingFailed(.unspecifiedReason, remote: false))))
        case .newConnectionParameter(let entry, _):
            // Sent only when the kernel is the central of a peripheral that asked for parameters.
            out.append(.log(.debug, "\(entry.peer.address): New Connection Parameter ignored (gattd is the peripheral)"))
        case .newLongTermKey(let key, _):
            if let done = bondAssembler.add(event) {
                bondCompleted(done, links, &out)
            } else if key.central {
                // A legacy pairing's central key comes first; ours follows at once if we gave one.
                timers.add(.finishBond(key.peer), at: now + .seconds(1))
            }
        case .newIdentityResolvingKey, .newSignatureResolvingKey:
            _ = bondAssembler.add(event)
        }
        return out
    }

    /// A legacy pairing's central key waited alone long enough: the bond is complete.
    mutating func finishBond(_ peer: KernelBDAddress, links: KernelLinkTable, _ out: inout [KernelAction]) {
        guard let done = bondAssembler.finish(peer) else { return }
        bondCompleted(done, links, &out)
    }

    private mutating func prompt(
        _ p: KernelPairingPrompt, _ question: SecurityManagerEvent, _ peer: KernelBDAddress, _ links: KernelLinkTable, _ out: inout [KernelAction]
    ) {
        switch prompts.asked(p, on: links.connection(of: peer.address)) {
        case .ask(let id):
            out.append(.event(.pairing(id, question)))
        case .refuse(let command):
            out.append(.log(.warning, "\(peer.address): the kernel asks a pairing question about a central gattd has no ATT connection with; refused"))
            out.append(.pairingReply(command))
        }
    }

    private mutating func bondCompleted(_ done: KernelBondAssembler.Completed, _ links: KernelLinkTable, _ out: inout [KernelAction]) {
        let bond = done.bond
        if done.bonded { kernelKeys?.add(bond) }
        guard let id = links.connection(of: bond.address, alias: done.resolvablePrivateAddress) else {
            out.append(.log(.warning, "\(bond.address): the kernel paired with a central gattd has no ATT connection with; its bond is not stored"))
            return
        }
        prompts.ended(id)
        out.append(.event(.pairing(id, .pairingComplete(bond, bonded: done.bonded))))
    }

    /// The daemon's answer, as the kernel's mgmt reply (User Confirmation / Passkey (Negative) Reply).
    mutating func respond(_ id: ConnectionID, _ answer: PairingUserAnswer) -> [KernelAction] {
        guard let command = prompts.answered(id, answer) else {
            return [.log(.debug, "\(id): no pairing question of the kernel is waiting; answer ignored")]
        }
        return [.pairingReply(command)]
    }

    /// The link went: its question is no longer asked.
    mutating func linkEnded(_ id: ConnectionID) { prompts.ended(id) }

    /// The adapter went: no question waits, and what the kernel holds is unknown.
    mutating func adapterLost() {
        prompts.removeAll()
        kernelKeys = nil
    }

    // MARK: - Keys

    /// The bond store's bonds (loaded at the next open, or now with `loadBonds`).
    mutating func setBonds(_ bonds: [Bond]) { self.bonds = bonds }

    /// Unbond: forgets the central's keys here; mgmt Unpair Device has the kernel forget them.
    mutating func removeBond(_ bond: Bond) -> KernelBDAddress {
        let peer = KernelBondMapping.peer(of: bond)
        kernelKeys?.remove(peer)
        return peer
    }

    /// Load Long Term Keys + Load Identity Resolving Keys with the bonds' keys, unless the
    /// kernel is known to hold exactly those (a pairing it reported itself).
    mutating func loadBonds(session: Int?, _ out: inout [KernelAction]) {
        let keys = KernelBondMapping.keys(for: bonds)
        if let known = kernelKeys, known.holdsSameKeys(as: keys) { return }
        kernelKeys = keys
        for address in keys.skipped {
            out.append(.log(.warning, "\(address): bond not loaded into the kernel (not an identity address: the kernel refuses it)"))
        }
        out.append(.management(.loadKeys(keys), session: session))
    }
}
