import GattCore

/// The kernel transport's advertising as rules, without I/O: one `KernelAdvertisingDriver`
/// (a mgmt advertising instance) per advertising set, instance numbers stable per set for the
/// life of the process, sets the kernel cannot take refused, an operation the kernel answered
/// Busy tried again a few times. The transport runs the operations it returns on its command
/// thread and tells it how each ended (`finished`).
struct KernelAdvertising {
    /// How often an operation the kernel answered Busy is tried again (about 3 s in all).
    static let busyRetryLimit = 8

    /// What the kernel offered at the last open (nil: it did not say).
    private(set) var support: KernelAdvertisingSupport?
    /// One driver per set (by `AdvertisingSet.id`), made when the set is first asked for.
    private var drivers: [String: KernelAdvertisingDriver] = [:]
    /// The instance number of each other set (the primary's is 1).
    private var instances: [String: UInt8] = [:]
    /// Tries of the running operation that the kernel answered Busy.
    private var busyRetries = 0

    /// What follows an operation that ended.
    enum Next: Equatable {
        /// The set's next operation.
        case run(KernelAdvertisingDriver.Operation)
        /// The same operation again after `delay` (the kernel was busy).
        case retry(KernelAdvertisingDriver.Operation, after: Duration)
    }

    /// The adapter opened: none of our instances is on it yet; `support` is what it offers.
    mutating func opened(support: KernelAdvertisingSupport?) {
        self.support = support
        drivers = [:]
        busyRetries = 0
    }

    /// The adapter went, and our instances with it.
    mutating func lost() { drivers = [:] }

    /// Whether `id` has a driver (an operation's end for a set that has none answers nothing).
    func has(_ id: String) -> Bool { drivers[id] != nil }

    /// Advertise exactly these sets: the sets refused (beyond the kernel's instances, data or
    /// PHYs: `limits`), and each set's operation, in set order.
    mutating func setDesired(
        _ sets: [AdvertisingSet], limits: AdvertisingLimits?
    ) -> (refused: [TransportEvent], operations: [(set: String, KernelAdvertisingDriver.Operation)]) {
        var refused: [TransportEvent] = []
        for set in sets where drivers[set.id] == nil {
            if let reason = refusal(of: set, among: sets, limits: limits) {
                refused.append(.advertisingRefused(whileConnected: false, reason: reason, set: set.id))
                continue
            }
            drivers[set.id] = KernelAdvertisingDriver(instance: instanceNumber(for: set.id), setID: set.id, commands: commands)
        }
        let wanted = Dictionary(sets.map { ($0.id, $0.payloads) }, uniquingKeysWith: { first, _ in first })
        var operations: [(set: String, KernelAdvertisingDriver.Operation)] = []
        for id in drivers.keys.sorted() {
            if let op = drivers[id]?.setDesired(wanted[id]) { operations.append((id, op)) }
        }
        return (refused, operations)
    }

    /// A connection in the peripheral role ended a connectable set's advertising (which one,
    /// only an extended controller tells, so every connectable instance counts as ended).
    mutating func connectionOpened() -> [TransportEvent] {
        var events: [TransportEvent] = []
        for id in drivers.keys.sorted() where drivers[id]?.isConnectable == true {
            events += drivers[id]?.connectionOpened() ?? []
        }
        return events
    }

    /// Once the core has answered a connection's events: the operations that add again an
    /// instance still wanted and remove those nobody wants any more.
    mutating func settle() -> [(set: String, KernelAdvertisingDriver.Operation)] {
        drivers.keys.sorted().compactMap { id in drivers[id]?.settle().map { (id, $0) } }
    }

    /// How `op` of set `id` ended: the events, and what follows (nil: nothing, or the set has
    /// no driver any more).
    mutating func finished(
        _ id: String, _ op: KernelAdvertisingDriver.Operation, _ outcome: KernelAdvertisingDriver.Outcome, connected: Bool
    ) -> (events: [TransportEvent], next: Next?)? {
        guard drivers[id] != nil else { return nil }
        // Busy: the kernel is still powering the adapter on or running another advertising
        // command (mgmt-api, Add Extended Advertising Data). Transient: the same operation
        // again shortly, a few times, before it counts as a refusal.
        if case .failed(KernelManagement.Status.busy, _) = outcome, busyRetries < Self.busyRetryLimit {
            busyRetries += 1
            return ([], .retry(op, after: .milliseconds(50 << min(busyRetries, 5))))
        }
        busyRetries = 0
        guard let (events, next) = drivers[id]?.finished(outcome, connected: connected) else { return nil }
        return (events, next.map(Next.run))
    }

    /// The instances on the air or registered (to remove when gattd stops: mgmt instances
    /// outlive the process that added them).
    var ownInstances: [UInt8] {
        drivers.values.filter { $0.state != .off }.map(\.instance).sorted()
    }

    /// The advertising commands every new instance uses (the fallback switches them for good).
    var commands: KernelAdvertisingDriver.Commands {
        if drivers.values.contains(where: { $0.commands == .addAdvertising }) { return .addAdvertising }
        return support?.commands ?? .addAdvertising
    }

    /// Why the kernel cannot take this set, in words naming the set's config path; nil when it fits.
    private func refusal(of set: AdvertisingSet, among sets: [AdvertisingSet], limits: AdvertisingLimits?) -> String? {
        guard let limits else { return nil }
        var all = sets.filter { drivers[$0.id] != nil }
        all.append(set)
        guard let violation = limits.violations(of: all).first(where: { $0.field.hasPrefix(set.path) }) else { return nil }
        return "\(violation)"
    }

    /// Instance numbers are stable per set for the life of the process: 1 for the primary set,
    /// the next free one for each other set as it first comes.
    private mutating func instanceNumber(for id: String) -> UInt8 {
        if id == AdvertisingSet.primaryID { return 1 }
        if let n = instances[id] { return n }
        let used = Set(instances.values)
        let n = (2...UInt8(254)).first { !used.contains($0) } ?? 254
        instances[id] = n
        return n
    }
}
