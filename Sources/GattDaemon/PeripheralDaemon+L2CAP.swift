import GattControlProtocol
import GattCore

#if canImport(Glibc)
import Glibc
#endif

// App L2CAP channels (`L2CAPChannelCoordinator`): the transport accepts LE credit-based
// channels only to channels a program listens for; each opened channel's socket goes to one
// of those programs through the control socket, and gattd's own part ends there (on the H4
// transport the host still moves the SDUs, with credits, between the link and the socket).
extension PeripheralDaemon: L2CAPChannelControl {
    public var l2capChannelList: [ControlL2CAPChannel] { l2capChannels.list }

    public func publishL2CAPChannel(_ json: JSONValue) -> ControlReply {
        switch l2capChannels.publish(json) {
        case .failure(let e):
            return .failure(e)
        case .success(let c):
            logger.info("L2CAP channel \"\(c.id)\" published on PSM \(c.psm) (security \(c.security.rawValue), MTU \(c.mtu))")
            return .l2capChannel(L2CAPChannelCoordinator.control(c))
        }
    }

    public func unpublishL2CAPChannel(_ id: String) -> ControlReply {
        if let s = services.publishing(l2capChannel: id) {
            return .failure(ControlError(.unknownChannel, "the service \(s.id ?? "\(s.uuid)") publishes the PSM of \"\(id)\"; remove it first"))
        }
        if let e = l2capChannels.unpublish(id) { return .failure(e) }
        logger.info("L2CAP channel \"\(id)\" unpublished")
        updateL2CAPServers()
        return .success
    }

    public func setL2CAPListeners(_ counts: [String: Int]) {
        l2capChannels.listeners = counts
        updateL2CAPServers()
    }

    /// Tells the transport which channels to accept (when they changed).
    func updateL2CAPServers() {
        guard let servers = l2capChannels.serversToAccept() else { return }
        stack.callBelow(now: now) { $0.setL2CAPChannelServers(servers); return [] }
    }

    /// A central opened an app's channel: hand its socket to a program listening for it.
    func l2capChannelOpened(_ channel: L2CAPChannelOpened, central: PeripheralConnection?) {
        let who = central.map { "\($0.address)" } ?? "a central"
        guard let socket = transport.takeL2CAPChannel(channel.ticket) else {
            logger.warning("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm)) but its socket is gone (\(channel.ticket))")
            return
        }
        if let handler = l2capChannelHandler, handler(channel, socket, central.map { "\($0.address)" } ?? "unknown") {
            logger.info("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm), MTU \(channel.peerMTU)); handed to a listening program")
            return
        }
        logger.warning("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm)) but no listening program can take it (none listens, or each has \(ControlServer.maximumPassing) channels it has not taken yet); closed")
        _ = close(socket)
    }
}
