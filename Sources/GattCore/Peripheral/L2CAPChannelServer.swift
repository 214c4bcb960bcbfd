/// What a link must have before an app's L2CAP channel is accepted on it
/// (Core Vol 3 Part A §4.22, the LE Credit Based Connection Response's security results).
public enum L2CAPChannelSecurity: String, Sendable, Equatable, CaseIterable {
    /// Any link.
    case none
    /// An encrypted link (refused otherwise: Insufficient Encryption, or Insufficient
    /// Authentication when the central has no keys yet).
    case encryption
    /// An encrypted link with authenticated (MITM-protected) keys.
    case authentication
}

/// An L2CAP channel apps publish (`publishL2CAPChannel`): the centrals open LE credit-based
/// channels to `psm`, and each channel goes to a program listening for `id`.
public struct L2CAPChannelServer: Sendable, Equatable {
    /// The config's / control op's name for it (what programs listen for).
    public var id: String
    /// Simplified Protocol/Service Multiplexer, LE: fixed 0x0001–0x007F (SIG-assigned) or
    /// dynamic 0x0080–0x00FF (Core Vol 3 Part A §4.22).
    public var psm: UInt16
    public var security: L2CAPChannelSecurity
    /// The largest SDU gattd takes from the central (our MTU in the connection response).
    public var mtu: Int

    /// The SDU MTU range of LE credit-based channels (Core Vol 3 Part A §4.22: at least 23).
    public static let mtuRange = 23...65535
    /// Dynamic LE PSMs: what gattd picks from when the config names none.
    public static let dynamicPSMs: ClosedRange<UInt16> = 0x0080...0x00FF
    public static let defaultMTU = 2048

    public init(id: String, psm: UInt16, security: L2CAPChannelSecurity = .none, mtu: Int = Self.defaultMTU) {
        self.id = id
        self.psm = psm
        self.security = security
        self.mtu = mtu
    }
}

/// Names the socket of a channel a transport accepted: the transport keeps the socket, the core
/// and the events carry only this, and whoever handles the channel takes the socket from the
/// transport with it (`PeripheralTransport.takeL2CAPChannel`). The core holds values, not resources.
public struct L2CAPChannelTicket: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "channel#\(rawValue)" }
}

/// A channel a central opened to an `L2CAPChannelServer`, as the transport reports it. Its
/// socket is a connected `SOCK_SEQPACKET` one (one message = one SDU), which the transport keeps
/// until it is taken with `ticket`: on the kernel transport the kernel's accepted L2CAP socket; on
/// the H4 transport one end of a socket pair whose other end the host pumps with credits.
public struct L2CAPChannelOpened: Sendable, Equatable {
    /// The server's id (`L2CAPChannelServer.id`).
    public var server: String
    public var psm: UInt16
    /// The largest SDU the central takes (its MTU) and the largest gattd takes (ours).
    public var peerMTU: Int
    public var mtu: Int
    /// The channel's socket, as the transport that accepted it keeps it.
    public var ticket: L2CAPChannelTicket

    public init(server: String, psm: UInt16, peerMTU: Int, mtu: Int, ticket: L2CAPChannelTicket) {
        self.server = server
        self.psm = psm
        self.peerMTU = peerMTU
        self.mtu = mtu
        self.ticket = ticket
    }
}
