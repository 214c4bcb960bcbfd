/// The peripheral's advertising sets (Core Spec Vol 6 Part B §4.4.2.10), the primary one (the
/// config's `advertising`) first among them, in one model: each set's payloads, whether the
/// `advertise` op wants it, where it stands with the transport, and whether the transport
/// reported it on the air; and the one list of sets last asked of the transport
/// (`.setAdvertising`). Sans-I/O: what the transport and the application say goes in, that list
/// and the sets' events come out.
///
/// One policy for every set: it is asked for while the controller is up, the op wants it, gattd
/// is not stopping, the controller has not refused it, and fewer than `max_connections` centrals
/// are connected when it counts them (`countsConnections`). A set refused while a central is
/// connected is asked for again after a disconnection. Where the primary set differs, one rule
/// each says so: it counts connections even when it is not connectable, a refusal not while
/// connected leaves it to be asked for again at the next change, and only a disconnection (or a
/// new controller) retries a refusal while connected; another set's refusal is retried after a
/// disconnection, a reload, the op or new data.
struct AdvertisingSets: Sendable {
    /// One set as the peripheral keeps it.
    struct Entry: Sendable, Equatable {
        var set: AdvertisingSet
        var state = SetState.idle
        /// The transport reported it on the air.
        var onAir = false

        var isPrimary: Bool { self.set.isPrimary }
        /// It stops at `max_connections`: the primary set always, another when connectable.
        var countsConnections: Bool { isPrimary || self.set.payloads.isConnectable }
    }

    /// Where one set stands with the transport.
    enum SetState: Sendable, Equatable {
        /// Not asked for (not wanted, connection limit, stopping, or no controller).
        case idle
        /// Asked for; the transport has not confirmed it yet.
        case starting
        /// On the air, as the transport confirmed.
        case onAir
        /// Asked to stop; the transport has not confirmed it yet.
        case stopping
        /// The controller refused it (while a central was connected, or not).
        case refused(whileConnected: Bool)

        var isOnOrStarting: Bool { self == .starting || self == .onAir }
    }

    /// Every set, the primary first.
    private(set) var entries: [Entry]
    /// A controller is up: sets can be asked for.
    private(set) var controllerUp = false
    /// The sets the transport was last asked to advertise.
    private var requested: [AdvertisingSet] = []
    /// Sets a reload removed that the transport has not reported off yet.
    private var leaving: Set<String> = []
    /// The sets the `advertise` op turned off, by id (kept across reloads: a set a reload
    /// brings back is off still).
    private(set) var turnedOff: Set<String> = []

    init(primary: AdvertisingPayloads, others: [AdvertisingSet]) {
        entries = [Entry(set: .primary(primary))]
            + others.map { Entry(set: $0) }
    }

    var primary: Entry { entries[0] }
    var sets: [AdvertisingSet] { entries.map(\.set) }
    var otherSets: [AdvertisingSet] { entries.dropFirst().map(\.set) }
    func isOnAir(_ id: String) -> Bool { entries.first { $0.set.id == id }?.onAir ?? false }
    /// No set on the air, and the primary set neither starting nor stopping.
    var isQuiet: Bool {
        entries.allSatisfy { !$0.onAir } && leaving.isEmpty && primary.state != .starting && primary.state != .stopping
    }

    /// The primary set's state as the public `AdvertisingState`.
    var primaryState: AdvertisingState {
        guard controllerUp else { return .noController }
        switch primary.state {
        case .idle: return .idle
        case .starting: return .starting
        case .onAir: return .advertising
        case .stopping: return .stopping
        case .refused: return .refusedWhileConnected
        }
    }

    private func index(_ id: String) -> Int? { entries.firstIndex { $0.set.id == id } }

    // MARK: - The policy

    /// What the policy needs of the peripheral.
    struct Conditions {
        var stopping: Bool
        var connections: Int
        var maxConnections: Int
    }

    func wanted(_ id: String) -> Bool { !turnedOff.contains(id) }

    private func shouldAdvertise(_ e: Entry, _ c: Conditions) -> Bool {
        wanted(e.set.id) && !c.stopping && (!e.countsConnections || c.connections < c.maxConnections)
    }

    /// Moves each set's state as the policy says, then asks for the list of sets if it changed.
    mutating func reconcile(_ c: Conditions) -> [PeripheralOutput] {
        guard controllerUp else { return [] }
        for i in entries.indices {
            let should = shouldAdvertise(entries[i], c)
            switch entries[i].state {
            case .refused: break
            case .idle, .stopping: if should { entries[i].state = .starting }
            case .starting, .onAir: if !should { entries[i].state = .stopping }
            }
        }
        return requestIfChanged()
    }

    /// `.setAdvertising(sets)` when the list of sets starting or on the air differs from the last one.
    private mutating func requestIfChanged() -> [PeripheralOutput] {
        guard controllerUp else { return [] }
        let wanted = entries.filter(\.state.isOnOrStarting).map(\.set)
        guard wanted != requested else { return [] }
        requested = wanted
        return [.setAdvertising(wanted)]
    }

    /// The transport stopped a set nobody asked it to stop (a connection, a refusal): the next
    /// request asks for it again if it is still wanted.
    private mutating func forgetRequest(_ id: String) { requested.removeAll { $0.id == id } }

    // MARK: - What the transport says

    /// A controller is ready: every set starts afresh (refusals forgotten, nothing asked yet).
    mutating func controllerReady() {
        controllerUp = true
        requested = []
        for i in entries.indices {
            entries[i].state = .idle
        }
    }

    /// The controller went away: every set is off the air.
    mutating func controllerLost() -> [PeripheralOutput] {
        controllerUp = false
        requested = []
        var out: [PeripheralOutput] = []
        for i in entries.indices {
            entries[i].state = .idle
            if entries[i].onAir {
                entries[i].onAir = false
                out.append(.event(.advertisingChanged(false, set: entries[i].set.id)))
            }
        }
        for id in leaving.sorted() { out.append(.event(.advertisingChanged(false, set: id))) }
        leaving = []
        return out
    }

    /// The transport reports a set on or off the air.
    mutating func changed(_ id: String, on: Bool, _ c: Conditions) -> [PeripheralOutput] {
        guard let i = index(id) else {
            // A set a reload removed, confirmed off.
            return !on && leaving.remove(id) != nil ? [.event(.advertisingChanged(false, set: id))] : []
        }
        switch (on, entries[i].state) {
        case (true, .starting), (true, .idle): entries[i].state = .onAir
        case (false, .onAir), (false, .starting), (false, .stopping): entries[i].state = .idle
        default: break
        }
        // Ended without being asked (a connection): asked for again if still wanted.
        if !on { forgetRequest(id) }
        var out: [PeripheralOutput] = []
        if entries[i].onAir != on {
            entries[i].onAir = on
            out.append(.event(.advertisingChanged(on, set: id)))
        }
        return out + reconcile(c)
    }

    /// The controller refused a set.
    mutating func refused(_ id: String, whileConnected: Bool, reason: String, connected: Bool) -> [PeripheralOutput] {
        forgetRequest(id)
        var out: [PeripheralOutput] = []
        if let i = index(id) {
            // The primary set, refused with no central connected, is asked for at the next change.
            entries[i].state = entries[i].isPrimary && !(whileConnected && connected) ? .idle : .refused(whileConnected: whileConnected)
            if entries[i].onAir {
                entries[i].onAir = false
                out.append(.event(.advertisingChanged(false, set: id)))
            }
        } else if leaving.remove(id) != nil {
            out.append(.event(.advertisingChanged(false, set: id)))
        }
        out.append(.event(.advertisingRefused(whileConnected: whileConnected, reason: reason, set: id)))
        return out + requestIfChanged()
    }

    /// A central disconnected: every refused set may be asked for again.
    mutating func disconnected() {
        for i in entries.indices {
            if case .refused = entries[i].state { entries[i].state = .idle }
        }
    }

    // MARK: - What the application says

    /// The `advertise` op for one set (kept by id); another set's refusal is retried.
    mutating func setWanted(_ wanted: Bool, set id: String) {
        if wanted { turnedOff.remove(id) } else { turnedOff.insert(id) }
        if let i = index(id), !entries[i].isPrimary, case .refused = entries[i].state { entries[i].state = .idle }
    }

    /// New payloads for one set, keeping everything else; false when there is no such set or
    /// they are these already. The primary set on (or starting) is asked for again with them;
    /// another set's refusal is retried (the controller may take the new data).
    mutating func replace(_ set: AdvertisingSet, _ c: Conditions) -> Bool {
        guard let i = index(set.id) else { return false }
        if entries[i].isPrimary {
            guard entries[i].set.payloads != set.payloads else { return false }
            entries[i].set.payloads = set.payloads
            if entries[i].state.isOnOrStarting, shouldAdvertise(entries[i], c) { entries[i].state = .starting }
        } else {
            guard entries[i].set != set else { return false }
            entries[i].set = set
            if case .refused = entries[i].state { entries[i].state = .idle }
        }
        return true
    }

    /// A reload's sets besides the primary one: the new list (what the op turned off stays off,
    /// what is on the air stays known), refusals of the others retried; false when unchanged.
    mutating func replaceOthers(_ others: [AdvertisingSet]) -> Bool {
        guard others != otherSets else { return false }
        var kept = [entries[0]]
        for set in others {
            var e = entries.first { !$0.isPrimary && $0.set.id == set.id } ?? Entry(set: set)
            e.set = set
            if case .refused = e.state { e.state = .idle }
            kept.append(e)
        }
        for e in entries.dropFirst() where e.onAir && !others.contains(where: { $0.id == e.set.id }) { leaving.insert(e.set.id) }
        entries = kept
        return true
    }
}
