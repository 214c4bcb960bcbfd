import DequeModule

/// What a console session owes its central: the bytes its program printed, in order, sent
/// as notifications of at most ATT_MTU - 3 octets (Vol 3 Part F §3.4.7.1), one at a time, each
/// once the previous one is queued for the central. A notification that reached nobody (the
/// central turned TX off) is kept and sent first once it subscribes again: nothing is lost
/// or reordered. Past `highWater` unsent bytes the program is not read (its writes block).
struct ConsoleOutflow {
    /// Printed and not yet queued for the central; the chunk in flight is at the front.
    private(set) var pending: Deque<UInt8> = []
    /// The notification's largest value: ATT_MTU - 3, at most 512 (a characteristic value's limit).
    private(set) var chunkSize: Int
    /// Bytes at the front of `pending` in the notification awaiting its reply.
    private(set) var inFlight: Int?
    /// Whether the central has TX's notifications on.
    private(set) var subscribed = true
    let highWater: Int

    init(mtu: Int = 23, highWater: Int = 16 * 1024) {
        self.chunkSize = Self.chunkSize(mtu: mtu)
        self.highWater = highWater
    }

    static func chunkSize(mtu: Int) -> Int { max(1, min(mtu - 3, 512)) }

    mutating func printed(_ bytes: some Sequence<UInt8>) { pending.append(contentsOf: bytes) }

    mutating func mtuChanged(_ mtu: Int) { chunkSize = Self.chunkSize(mtu: mtu) }

    mutating func subscriptionChanged(_ on: Bool) { subscribed = on }

    /// The next notification's value, when one may go now (it is then in flight).
    mutating func next() -> [UInt8]? {
        guard inFlight == nil, subscribed, !pending.isEmpty else { return nil }
        let n = min(chunkSize, pending.count)
        inFlight = n
        return Array(pending.prefix(n))
    }

    /// The reply to the notification in flight: `delivered` (queued for the central) drops its
    /// bytes; otherwise they stay first and wait for the central to subscribe again.
    mutating func completed(delivered: Bool) {
        guard let n = inFlight else { return }
        inFlight = nil
        if delivered {
            pending.removeFirst(n)
        } else {
            subscribed = false
        }
    }

    /// Whether to read more of what the program prints.
    var readsProgram: Bool { pending.count < highWater }
    var isDrained: Bool { pending.isEmpty }
}
