import GattCore

/// Several advertising sets on a controller with legacy advertising only (Core Spec Vol 4
/// Part E §7.8.5–§7.8.9: one advertiser): the sets take turns, `slice` each, as the Linux
/// kernel rotates its advertising instances. A turn is one `AdvertisingDriver` batch: LE Set
/// Advertising Enable off, Parameters, Data, Scan Response Data, Enable on. Sans-I/O: the
/// time comes in (`setDesired`, `tick`), the end of the turn goes out (`deadline`).
///
/// With one set there is no rotation: the driver's batches and events are as without sets.
/// Sets that need extended PDUs are refused. A connection ends the set on the air (legacy
/// advertising ends with it, Vol 6 Part B §4.4.2): that set leaves the rotation until the
/// core asks for it again, and the others go on taking turns. While rotating, a set counts
/// as on from its first turn until it leaves the rotation.
public struct AdvertisingRotation: Sendable {
    /// How long each set advertises before the next one's turn (the kernel's default
    /// advertising instance timeout is 2 s too).
    public static let slice: Duration = .seconds(2)

    public private(set) var driver = AdvertisingDriver()
    /// The sets taking turns, in the core's order (legacy PDUs only).
    public private(set) var sets: [AdvertisingSet] = []
    /// The set the driver advertises or is being made to (kept after it leaves the
    /// rotation, until the driver reports it off).
    public private(set) var current: String?
    /// When the current turn ends; nil unless two sets or more take turns.
    public private(set) var deadline: Duration?
    /// The sets reported on (`advertisingChanged(true, set:)`) and not off since.
    private var reportedOn: Set<String> = []
    /// Where a set the controller stopped left the rotation: the next turn follows it once
    /// the driver is idle (see `leave`, `resume`).
    private var resumeAfter: (id: String, order: [AdvertisingSet])?

    public init() {}

    /// Why a set cannot take turns here.
    public static let extendedRefusal = "needs extended advertising, which the controller lacks"

    /// Sets take turns now (two or more).
    public var isRotating: Bool { sets.count > 1 }

    /// The core's intent: these sets advertised, taking turns when there are several.
    /// Returns what to report (sets refused, sets leaving the rotation) and the batch to run now.
    public mutating func setDesired(_ wanted: [AdvertisingSet], now: Duration) -> (events: [TransportEvent], batch: AdvertisingDriver.Batch?) {
        var events: [TransportEvent] = []
        for set in wanted where set.payloads.pdus.isExtended {
            events.append(.advertisingRefused(whileConnected: false, reason: "set \"\(set.id)\" \(Self.extendedRefusal)", set: set.id))
        }
        let old = sets
        resumeAfter = nil
        sets = wanted.filter { !$0.payloads.pdus.isExtended }
        let ids = Set(sets.map(\.id))
        for id in reportedOn.sorted() where !ids.contains(id) && id != current {
            reportedOn.remove(id)
            events.append(.advertisingChanged(false, set: id))
        }
        deadline = isRotating ? deadline ?? now + Self.slice : nil
        if let current, let set = sets.first(where: { $0.id == current }) {
            return (events, driver.setDesired(set.payloads))
        }
        guard let next = next(after: current, in: old) else {
            // Nothing left: the driver disables, and reports the last set off.
            return (events, driver.setDesired(nil))
        }
        if let current, reportedOn.remove(current) != nil {
            // Its turn ends for good; the next set replaces it in one batch.
            events.append(.advertisingChanged(false, set: current))
        }
        current = next.id
        return (events, driver.setDesired(next.payloads))
    }

    /// Time passed: at the end of a turn, the next set's. Nil when nothing is due.
    public mutating func tick(now: Duration) -> AdvertisingDriver.Batch? {
        guard let due = deadline, now >= due else { return nil }
        deadline = now + Self.slice
        // After a connection or a refusal the driver waits for `resume`: the turn is skipped.
        guard driver.desired != nil, let next = next(after: current, in: sets), next.id != current else { return nil }
        current = next.id
        return driver.setDesired(next.payloads)
    }

    /// The driver's batch ended: what to report and the next batch.
    public mutating func batchFinished(failure: (command: HCICommand, status: HCIStatus)?, connected: Bool) -> (events: [TransportEvent], next: AdvertisingDriver.Batch?) {
        let (events, next) = driver.batchFinished(failure: failure, connected: connected)
        let reported = attribute(events)
        if let next { return (reported, next) }
        return (reported, resume())
    }

    /// A central connected (or a connection attempt failed): legacy advertising ended, so
    /// the set on the air leaves the rotation; the others go on when the driver is idle.
    public mutating func connectionOpened() -> (events: [TransportEvent], batch: AdvertisingDriver.Batch?) {
        let events = attribute(driver.connectionOpened())
        if let current { leave(current) }
        return (events, resume())
    }

    /// A new random address: LE Set Random Address, with advertising paused around it when on.
    public mutating func changeAddress(_ command: HCICommand) -> AdvertisingDriver.Batch? {
        driver.changeAddress(command)
    }

    // MARK: - Turns

    /// The driver's events, naming the current set. While rotating, a set is on from its
    /// first turn until it leaves: the driver's other "on"s (each turn) are not news.
    private mutating func attribute(_ events: [TransportEvent]) -> [TransportEvent] {
        guard let id = current else { return events }
        var out: [TransportEvent] = []
        for e in events {
            switch e {
            case .advertisingChanged(let on, _):
                let news = on ? reportedOn.insert(id).inserted : reportedOn.remove(id) != nil
                if news || !isRotating { out.append(.advertisingChanged(on, set: id)) }
            case .advertisingRefused(let whileConnected, let reason, _):
                reportedOn.remove(id)
                leave(id)
                out.append(.advertisingRefused(whileConnected: whileConnected, reason: reason, set: id))
            default:
                out.append(e)
            }
        }
        return out
    }

    /// A set the controller stopped (a connection, a refusal) until the core asks again.
    private mutating func leave(_ id: String) {
        let order = sets
        sets.removeAll { $0.id == id }
        if !isRotating { deadline = nil }
        // Remember where its turn was: the next set follows it.
        resumeAfter = (id, order)
    }

    /// The set whose turn comes after `id`'s in `order`: the one after it still taking
    /// turns, or the first.
    private func next(after id: String?, in order: [AdvertisingSet]) -> AdvertisingSet? {
        guard !sets.isEmpty else { return nil }
        let ids = Set(sets.map(\.id))
        if let id, let i = order.firstIndex(where: { $0.id == id }) {
            let after = order[(i + 1)...] + order[..<i]
            if let n = after.first(where: { ids.contains($0.id) }) { return sets.first { $0.id == n.id } }
        }
        return sets.first
    }

    /// With the driver idle and nothing asked of it, the next set's turn.
    private mutating func resume() -> AdvertisingDriver.Batch? {
        guard driver.state == .off, driver.desired == nil, let after = resumeAfter else { return nil }
        resumeAfter = nil
        guard let next = next(after: after.id, in: after.order) else { return nil }
        current = next.id
        return driver.setDesired(next.payloads)
    }
}
