// The advertising sets besides the primary one (the config's `advertising_sets`), and the one
// request that carries every set to the transport. The primary set keeps its own state
// (`AdvertisingState`: connections and `max_connections` start and stop it); another set is
// on the air while the controller is up, the `advertise` op leaves it on, gattd is not stopping,
// the controller did not refuse it, and, if it is connectable, fewer than `max_connections`
// centrals are connected. A connection to one set leaves the others on the air.
extension Peripheral {
    /// The primary set as the transport gets it.
    public var primarySet: AdvertisingSet {
        AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: payloads)
    }

    /// Every set, the primary first.
    public var allSets: [AdvertisingSet] { [primarySet] + otherSets }

    /// Whether the set with this id is on the air, as the transport reported.
    public func isOnAir(_ id: String) -> Bool {
        id == AdvertisingSet.primaryID ? isAdvertising : otherSetsOnAir.contains(id)
    }

    /// The sets to advertise now: the primary while its state is starting or advertising,
    /// then every other set the policy allows.
    var wantedSets: [AdvertisingSet] {
        guard advertising != .noController else { return [] }
        let primary = advertising.isOnOrStarting ? [primarySet] : []
        return primary + otherSets.filter { set in
            !isStopping && !otherSetsOff.contains(set.id) && !otherSetsRefused.contains(set.id)
                && (!set.payloads.isConnectable || connections.count < maxConnections)
        }
    }

    /// New payloads for one set, keeping everything else (the `advertising_data` control op):
    /// the transport gets the list of sets again only when they changed and the set is wanted
    /// on the air. An unknown id changes nothing.
    public mutating func replaceSet(_ set: AdvertisingSet) -> [PeripheralOutput] {
        if set.isPrimary {
            guard replacePrimaryPayloads(set.payloads) else { return [] }
        } else {
            guard let i = otherSets.firstIndex(where: { $0.id == set.id }), otherSets[i] != set else { return [] }
            otherSets[i] = set
            // The controller may take the new data where it refused the old.
            otherSetsRefused.remove(set.id)
        }
        return reconcileAdvertising()
    }

    /// Sets the primary set's payloads; false when they were these already.
    mutating func replacePrimaryPayloads(_ new: AdvertisingPayloads) -> Bool {
        guard new != payloads else { return false }
        payloads = new
        // Asked again with the new payloads (the list of sets differs from the last request).
        if advertising.isOnOrStarting, shouldAdvertise { advertising = .starting }
        return true
    }

    /// `.setAdvertising(sets)` when the list differs from the last one asked for.
    mutating func requestSetsIfChanged() -> [PeripheralOutput] {
        guard advertising != .noController else { return [] }
        let wanted = wantedSets
        guard wanted != requestedSets else { return [] }
        requestedSets = wanted
        return [.setAdvertising(wanted)]
    }

    /// The transport stopped a set nobody asked it to stop (a connection, a refusal): the next
    /// reconcile asks for it again if it is still wanted.
    mutating func forgetRequest(_ id: String) {
        requestedSets.removeAll { $0.id == id }
    }

    mutating func otherSetChanged(_ id: String, on: Bool) -> [PeripheralOutput] {
        var out: [PeripheralOutput] = []
        guard otherSets.contains(where: { $0.id == id }) else {
            // A set a reload removed, confirmed off.
            if !on, otherSetsOnAir.remove(id) != nil { out.append(.event(.advertisingChanged(false, set: id))) }
            return out
        }
        if on, otherSetsOnAir.insert(id).inserted {
            out.append(.event(.advertisingChanged(true, set: id)))
        } else if !on, otherSetsOnAir.remove(id) != nil {
            out.append(.event(.advertisingChanged(false, set: id)))
        }
        if !on { forgetRequest(id) }
        return out + reconcileAdvertising()
    }

    mutating func otherSetRefused(_ id: String, whileConnected: Bool, reason: String) -> [PeripheralOutput] {
        otherSetsRefused.insert(id)
        forgetRequest(id)
        var out: [PeripheralOutput] = []
        if otherSetsOnAir.remove(id) != nil { out.append(.event(.advertisingChanged(false, set: id))) }
        out.append(.event(.advertisingRefused(whileConnected: whileConnected, reason: reason, set: id)))
        return out + requestSetsIfChanged()
    }

    /// The controller went away: every other set is off the air.
    mutating func otherSetsLost() -> [PeripheralOutput] {
        let lost = otherSets.map(\.id).filter { otherSetsOnAir.contains($0) }
        otherSetsOnAir = []
        return lost.map { .event(.advertisingChanged(false, set: $0)) }
    }
}
