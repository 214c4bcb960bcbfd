/// The connection parameters of LE Connection Update, LE Remote Connection
/// Parameter Request (Reply) and the L2CAP Connection Parameter Update Request,
/// in wire units: interval in 1.25 ms, latency in connection events, supervision
/// timeout in 10 ms.
public struct LEConnectionParameters: Sendable, Hashable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16
    public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }
}
