/// A Disconnection Request of ours waiting for its response (Vol 3 Part A §4.6, §6.2.1).
struct PendingDisconnection: Sendable {
    /// The RTX timer of a signalling request: 1–60 s (§6.2.1); 2 s, as Zephyr.
    static let rtx: Duration = .seconds(2)
    let peerCID: UInt16
    let deadline: Duration
}
