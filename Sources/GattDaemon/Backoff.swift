import NIOCore

/// Reconnect delays: 250 ms, doubling up to 10 s; reset once the transport is up.
struct Backoff {
    private(set) var delay: TimeAmount = .milliseconds(250)
    private(set) var failures = 0

    /// The delay before the next attempt, and whether this is the first failure in a row.
    mutating func next() -> (delay: TimeAmount, first: Bool) {
        failures += 1
        let d = delay
        delay = min(delay * 2, .seconds(10))
        return (d, failures == 1)
    }

    mutating func reset() { self = Backoff() }
}
