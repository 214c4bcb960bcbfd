// Bonded clients' GATT state (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3): the daemon
// recognises a bonded central and hands its stored state back to the core.
extension Peripheral {
    /// The connection's client state, as a bond's store keeps it.
    public func clientState(for id: ConnectionID) -> GATTClientState? { att.clientState(for: id) }

    /// A bonded central was recognised on `id` (its link is encrypted with the bond's key):
    /// its CCCDs, Client Supported Features and change awareness come back, and a Service
    /// Changed it is owed is indicated when it enabled that.
    public mutating func restoreClientState(_ id: ConnectionID, _ state: GATTClientState, now: Duration) -> [PeripheralOutput] {
        guard connections[id] != nil else { return [] }
        att.restoreClientState(id, state)
        return absorb(att.indicateServiceChangedOwed(id, now: now)?.outputs ?? [])
    }

    /// The central on `id` just bonded: its client state is kept from now on.
    public mutating func setBonded(_ id: ConnectionID) { att.setBonded(id) }

    /// The database changed (reload or runtime change) over `range`: every connected
    /// client becomes change-unaware and is indicated Service Changed for what it is owed
    /// when it enabled that. The result counts the indications queued.
    mutating func indicateDatabaseChanged(from oldHash: [UInt8], range: HandleRange, now: Duration) -> (NotifyResult, [PeripheralOutput]) {
        att.databaseChanged(from: oldHash, range: range)
        var out: [PeripheralOutput] = []
        var queued = 0
        var result: NotifyResult?
        for id in connections.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let r = att.indicateServiceChangedOwed(id, now: now) else { continue }
            out += absorb(r.outputs)
            if case .queued(let n) = r.result { queued += n } else { result = result ?? r.result }
        }
        return (result ?? .queued(queued), out)
    }
}
