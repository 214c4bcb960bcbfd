import GattCore

/// The sockets of the L2CAP channels a transport accepted and reported
/// (`.l2capChannelOpened`), by ticket, until the daemon takes them
/// (`PeripheralTransport.takeL2CAPChannel`); the transport closes what is left when it closes.
struct ChannelSockets: Sendable {
    private var next: UInt64 = 0
    private var sockets: [L2CAPChannelTicket: Int32] = [:]

    /// Keeps `socket` and names it.
    mutating func keep(_ socket: Int32) -> L2CAPChannelTicket {
        next += 1
        let ticket = L2CAPChannelTicket(next)
        sockets[ticket] = socket
        return ticket
    }

    /// The socket, handed over (the caller closes it); nil when taken already.
    mutating func take(_ ticket: L2CAPChannelTicket) -> Int32? {
        sockets.removeValue(forKey: ticket)
    }

    /// The sockets nobody took, for the transport to close.
    mutating func removeAll() -> [Int32] {
        defer { sockets.removeAll() }
        return Array(sockets.values)
    }
}
