import GattCore

/// Repeated attempts protection (Core Spec Vol 3 Part H §2.3.6): after a pairing
/// fails authentication, the same peer must wait before pairing again, and the
/// wait doubles with each further failure. Keyed by peer identity (the identity
/// address when the host resolved one, otherwise the connection address); the
/// host keeps one value across links and feeds it each responder's outputs.
public struct RepeatedAttempts: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var failures: Int
        var blockedUntil: Duration
    }

    /// The wait after the first failure.
    public var initialInterval: Duration
    /// The wait never grows beyond this.
    public var maximumInterval: Duration
    private var entries: [BluetoothAddress: Entry] = [:]

    /// No peer waits at first; the wait starts at `initialInterval` and doubles up to `maximumInterval`.
    public init(initialInterval: Duration = .seconds(2), maximumInterval: Duration = .seconds(120)) {
        self.initialInterval = initialInterval
        self.maximumInterval = maximumInterval
    }

    /// Whether `peer` must still wait before a new Pairing Request is accepted.
    public func isBlocked(_ peer: BluetoothAddress, now: Duration) -> Bool {
        guard let e = entries[peer] else { return false }
        return now < e.blockedUntil
    }

    /// Records an authentication failure: the wait starts now and doubles each time.
    public mutating func recordFailure(_ peer: BluetoothAddress, now: Duration) {
        let failures = (entries[peer]?.failures ?? 0) + 1
        var wait = initialInterval
        for _ in 1..<min(failures, 32) where wait < maximumInterval { wait = wait * 2 }
        entries[peer] = Entry(failures: failures, blockedUntil: now + min(wait, maximumInterval))
    }

    /// A successful pairing forgets the peer's failures.
    public mutating func recordSuccess(_ peer: BluetoothAddress) { entries[peer] = nil }

    /// Applies a responder's outputs: failures that count as failed authentication
    /// attempts (confirm value, DHKey check or numeric comparison failures we
    /// detected) start or double the wait; a completed pairing clears it.
    public mutating func observe(_ outputs: [SecurityManagerOutput], peer: BluetoothAddress, now: Duration) {
        for output in outputs {
            switch output {
            case .event(.pairingFailed(let reason, remote: false)) where Self.countedReasons.contains(reason):
                recordFailure(peer, now: now)
            case .event(.pairingComplete): recordSuccess(peer)
            default: break
            }
        }
    }

    static let countedReasons: Set<SMPPairingFailedReason> = [
        .confirmValueFailed, .dhKeyCheckFailed, .numericComparisonFailed,
    ]
}
