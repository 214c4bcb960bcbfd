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
