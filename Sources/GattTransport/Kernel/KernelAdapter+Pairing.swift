import GattCore

// Pairing on the kernel transport (`KernelPairing`), as the adapter's session sees it.
extension KernelAdapter {
    /// What the pairing agent's mgmt socket reported.
    mutating func managementEvent(_ event: KernelManagementEvent, now: Duration) -> [KernelAction] {
        guard !lifecycle.isClosed else { return [] }
        return pairing.managementEvent(event, links: bearers.links, now: now, timers: &timers)
    }

    /// The daemon's answer to a pairing question.
    mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer) -> [KernelAction] {
        pairing.respond(id, answer)
    }

    /// The bond store's bonds: loaded into the kernel now when it lacks some (at the next
    /// flush), and at every open of the adapter (it forgets them when it is unregistered).
    public mutating func setBonds(_ bonds: [Bond]) {
        pairing.setBonds(bonds)
        guard lifecycle.isReady else { return }
        var out: [KernelAction] = []
        pairing.loadBonds(session: lifecycle.session, &out)
        outbox += out
    }

    /// Unbond: mgmt Unpair Device, so the kernel forgets the central's keys at once (and drops
    /// its link). With the adapter down, the next open loads the bonds without it.
    mutating func removeBond(_ bond: Bond) -> [KernelAction] {
        let peer = pairing.removeBond(bond)
        guard lifecycle.isReady else { return [] }
        return [.management(.unpair(peer), session: lifecycle.session)]
    }

    /// Unpair Device failed: the kernel may hold anything; the remaining bonds are loaded.
    mutating func unpairFailed() -> [KernelAction] {
        pairing.kernelKeys = nil
        var out: [KernelAction] = []
        if lifecycle.isReady { pairing.loadBonds(session: lifecycle.session, &out) }
        return out
    }

    /// Loading the keys in `session` failed: what the kernel holds is unknown.
    mutating func keysNotLoaded(session: Int?) {
        if lifecycle.isCurrent(session) { pairing.kernelKeys = nil }
    }

    /// Warnings of the security settings the kernel took, each said once.
    mutating func securityApplied(warnings: [String]) -> [KernelAction] {
        pairing.applied(warnings: warnings, adapter: adapterName)
    }
}
