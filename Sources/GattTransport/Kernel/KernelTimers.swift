import GattCore

/// What the kernel transport's rules wait for a time to do, on the stack's one timer (sans
/// I/O: `KernelAdapter.tick` runs the jobs due, in the order they fell due).
struct KernelTimers: Sendable {
    enum Job: Sendable, Equatable {
        /// Read the link's security level again: the kernel processes an Encryption Change just
        /// after the raw socket sees it.
        case checkSecurity(ConnectionID, socket: KernelSocketID, attemptsLeft: Int)
        /// Report a closed link's disconnection, whether its HCI reason came or not.
        case reportDisconnection(ConnectionID, KernelLink, why: String?)
        /// Look again for the link of an accepted channel (its ATT socket may come later).
        case findChannelLink(KernelSocketID)
        /// A legacy pairing's central key came alone: the bond is complete without ours.
        case finishBond(KernelBDAddress)
        /// An advertising operation the kernel answered Busy, again.
        case retryAdvertising(KernelAdvertisingDriver.Operation, set: String, session: Int?)
    }

    private var jobs: [(due: Duration, order: Int, job: Job)] = []
    private var added = 0

    mutating func add(_ job: Job, at due: Duration) {
        added += 1
        jobs.append((due, added, job))
    }

    /// When the first job falls due.
    var nextDeadline: Duration? { jobs.lazy.map(\.due).min() }

    /// The jobs due at `now`, removed, earliest first (ties in the order they were added).
    mutating func due(at now: Duration) -> [Job] {
        guard jobs.contains(where: { $0.due <= now }) else { return [] }
        let due = jobs.filter { $0.due <= now }.sorted { ($0.due, $0.order) < ($1.due, $1.order) }
        jobs.removeAll { $0.due <= now }
        return due.map(\.job)
    }

    /// Removes the jobs `isDropped` picks, and returns them in the order they were added.
    mutating func remove(where isDropped: (Job) -> Bool) -> [Job] {
        let dropped = jobs.filter { isDropped($0.job) }.sorted { $0.order < $1.order }.map(\.job)
        jobs.removeAll { isDropped($0.job) }
        return dropped
    }

    var isEmpty: Bool { jobs.isEmpty }
}
