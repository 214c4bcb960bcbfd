/// Names the socket of a channel a transport accepted: the transport keeps the socket, the core
/// and the events carry only this, and whoever handles the channel takes the socket from the
/// transport with it (`PeripheralTransport.takeL2CAPChannel`). The core holds values, not resources.
public struct L2CAPChannelTicket: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "channel#\(rawValue)" }
}
