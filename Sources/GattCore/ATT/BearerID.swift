/// One ATT bearer (Core Spec Vol 3 Part F §3.2.11): a connection and the L2CAP channel ATT
/// runs on, the fixed ATT channel (CID 0x0004, the unenhanced bearer) or an Enhanced ATT
/// channel (a dynamic CID of an Enhanced Credit Based Flow Control channel, PSM 0x0027).
public struct BearerID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The L2CAP CID of the LE fixed ATT channel (Vol 3 Part A §2.1).
    public static let fixedATTChannel: UInt16 = 0x0004

    public var connection: ConnectionID
    /// The L2CAP channel's local CID.
    public var channel: UInt16

    public init(_ connection: ConnectionID, channel: UInt16) {
        self.connection = connection
        self.channel = channel
    }

    /// The connection's unenhanced ATT bearer on the fixed channel.
    public static func fixed(_ connection: ConnectionID) -> BearerID { BearerID(connection, channel: fixedATTChannel) }

    /// An Enhanced ATT bearer (any channel but the fixed one).
    public var isEnhanced: Bool { channel != Self.fixedATTChannel }

    public var description: String {
        isEnhanced ? "\(connection)/cid 0x\(String(channel, radix: 16, uppercase: true))" : connection.description
    }

    /// By connection, then by channel (the fixed channel's CID is below every dynamic CID).
    public static func < (a: BearerID, b: BearerID) -> Bool {
        (a.connection.rawValue, a.channel) < (b.connection.rawValue, b.channel)
    }
}
