import GattCore

/// A connection parameter update the host asked for and waits on (one per link).
enum PendingConnectionUpdate: Sendable, Equatable {
    /// HCI LE Connection Update sent as peripheral (the LL Connection Parameters Request
    /// procedure, Vol 6 Part B §5.1.7): LE Connection Update Complete ends it.
    case controller(LEConnectionParameters)
    /// L2CAP Connection Parameter Update Request sent (Vol 3 Part A §4.20) with this
    /// identifier (nil until ``LinkProcedures/signalled(_:identifier:)``): a rejecting response
    /// ends it, else the LE Connection Update Complete of the update the central then makes.
    case signalling(identifier: UInt8?, LEConnectionParameters)

    /// What was asked for.
    var parameters: LEConnectionParameters {
        switch self {
        case .controller(let p), .signalling(_, let p): p
        }
    }
}

extension LEConnectionParameters {
    /// An interval within [min, max] and the same latency and supervision timeout: what a
    /// link with these values already gives (or an update to them answers).
    func admit(interval: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
        (intervalMin...max(intervalMin, intervalMax)).contains(interval) && latency == self.latency && timeout == supervisionTimeout
    }
}
