/// The one ordered path of every write of a persisted value, per key, and the batches that
/// make them durable (group commit). Pure state: `PersistedValues` runs the store.
///
/// Each write gets the next sequence number when it is submitted: that is its place in
/// the key's order, and "newer" means "a larger sequence number". A batch holds one value
/// per key, the newest submitted; the durable value of a key only ever moves to a newer
/// one (`finish`), so no path can put an older value on disk after a newer one. A ticket
/// (one acknowledged write, of one or more keys) completes with the commit that covers its
/// values or newer ones of the same keys.
///
/// Two kinds of write: a durable one (`submit`: Write Request, Execute Write, control
/// `set`/`notify`) is served once its ticket completes; a best-effort one (`record`: Write
/// Command, Signed Write) is served at once and saved in the background. A durable write
/// overtaken by a best-effort one submitted after it is acknowledged, but must not replace
/// the newer value being served: its ticket lists such keys (`Completion.overtaken`).
struct CommitQueue: Equatable {
    struct Versioned: Equatable {
        var value: [UInt8]
        var sequence: UInt64
    }

    /// Values to make durable together, and the tickets waiting for them.
    struct Batch: Equatable {
        var values: [String: Versioned] = [:]
        /// Each ticket with the sequence numbers of its writes.
        var tickets: [(ticket: Int, writes: [String: UInt64])] = []

        var isEmpty: Bool { values.isEmpty && tickets.isEmpty }

        static func == (a: Batch, b: Batch) -> Bool {
            a.values == b.values && a.tickets.map(\.ticket) == b.tickets.map(\.ticket) && a.tickets.map(\.writes) == b.tickets.map(\.writes)
        }
    }

    enum Phase: Equatable {
        case idle
        /// The store is writing this batch.
        case committing(Batch)
    }

    /// A ticket whose writes are durable; `overtaken`: its keys whose served value is a newer
    /// best-effort one (key: that value).
    struct Completion: Equatable {
        var ticket: Int
        var overtaken: [String: [UInt8]]
    }

    private(set) var durable: [String: Versioned]
    private(set) var phase = Phase.idle
    private(set) var waiting = Batch()
    /// The newest best-effort write of each key (served from the moment it was submitted).
    private var bestEffort: [String: Versioned] = [:]
    private var sequence: UInt64 = 0

    /// `durable`: what the store loaded (older than anything submitted from now on).
    init(durable: [String: [UInt8]]) {
        self.durable = durable.mapValues { Versioned(value: $0, sequence: 0) }
    }

    var isBusy: Bool {
        if case .committing = phase { return true }
        return !waiting.isEmpty
    }

    /// The newest value submitted for `key` (what a restart has once every commit is done).
    func latest(_ key: String) -> [UInt8]? {
        if let v = waiting.values[key] { return v.value }
        if case .committing(let b) = phase, let v = b.values[key] { return v.value }
        return durable[key]?.value
    }

    private mutating func nextSequence() -> UInt64 {
        sequence += 1
        return sequence
    }

    /// A durable write: `changes` in order (a later one of the same key is newer).
    mutating func submit(_ changes: [(key: String, value: [UInt8])], ticket: Int) {
        var writes: [String: UInt64] = [:]
        for c in changes {
            let s = nextSequence()
            waiting.values[c.key] = Versioned(value: c.value, sequence: s)
            writes[c.key] = s
        }
        waiting.tickets.append((ticket, writes))
    }

    /// A best-effort write already served; false when it is the newest value submitted anyway.
    @discardableResult
    mutating func record(_ key: String, _ value: [UInt8]) -> Bool {
        guard latest(key) != value else { return false }
        let v = Versioned(value: value, sequence: nextSequence())
        bestEffort[key] = v
        waiting.values[key] = v
        return true
    }

    /// The values of the next commit, when none is running and something waits.
    mutating func startCommit() -> [String: [UInt8]]? {
        guard case .idle = phase, !waiting.isEmpty else { return nil }
        phase = .committing(waiting)
        waiting = Batch()
        return phase.values
    }

    /// The commit started last ended; returns its tickets, in submission order.
    mutating func finish(durable success: Bool) -> [Completion] {
        guard case .committing(let batch) = phase else { return [] }
        phase = .idle
        return settle(batch, durable: success)
    }

    /// At shutdown: what waits, to commit at once (beside the normal path).
    mutating func takeWaiting() -> Batch {
        defer { waiting = Batch() }
        return waiting
    }

    /// A batch taken with `takeWaiting` ended.
    mutating func finish(_ batch: Batch, durable success: Bool) -> [Completion] { settle(batch, durable: success) }

    private mutating func settle(_ batch: Batch, durable success: Bool) -> [Completion] {
        guard success else { return batch.tickets.map { Completion(ticket: $0.ticket, overtaken: [:]) } }
        for (key, v) in batch.values where v.sequence > durable[key]?.sequence ?? 0 {
            durable[key] = v  // only ever newer: an older value never replaces a newer one
        }
        return batch.tickets.map { t in
            var overtaken: [String: [UInt8]] = [:]
            for (key, s) in t.writes {
                if let b = bestEffort[key], b.sequence > s { overtaken[key] = b.value }
            }
            return Completion(ticket: t.ticket, overtaken: overtaken)
        }
    }
}

extension CommitQueue.Phase {
    fileprivate var values: [String: [UInt8]]? {
        guard case .committing(let b) = self else { return nil }
        return b.values.mapValues(\.value)
    }
}
