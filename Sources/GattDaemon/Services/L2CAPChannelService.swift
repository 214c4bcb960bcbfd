import GattControlProtocol
import GattCore
import GattTransport

#if canImport(Glibc)
import Glibc
#endif

/// App L2CAP channels on the daemon's side (`L2CAPChannelCoordinator`: the config's and the
/// published channels, their PSMs and listeners): the transport accepts LE credit-based
/// channels only to channels a program listens for; each opened channel's socket goes to one of
/// those programs through the control socket, and gattd's own part ends there (on the H4
/// transport the host still moves the SDUs, with credits, between the link and the socket).
final class L2CAPChannelService {
    private unowned let context: DaemonContext
    private let transport: any PeripheralTransport
    private(set) var coordinator: L2CAPChannelCoordinator
    /// Where opened channels go (set by `ControlServer` through the daemon).
    var handler: ((L2CAPChannelOpened, _ socket: Int32, _ central: String) -> Bool)?

    init(context: DaemonContext, coordinator: L2CAPChannelCoordinator, transport: any PeripheralTransport) {
        self.context = context
        self.coordinator = coordinator
        self.transport = transport
    }

    var channels: [L2CAPChannelConfiguration] { coordinator.channels }
    var list: [ControlL2CAPChannel] { coordinator.list }

    /// A reloaded config gets the channels' PSMs (`L2CAPChannelCoordinator.adopt`).
    func adopt(_ configuration: inout GattConfiguration) { coordinator.adopt(&configuration) }

    func publish(_ json: JSONValue) -> ControlReply {
        switch coordinator.publish(json) {
        case .failure(let e):
            return .failure(e)
        case .success(let c):
            context.logger.info("L2CAP channel \"\(c.id)\" published on PSM \(c.psm) (security \(c.security.rawValue), MTU \(c.mtu))")
            return .l2capChannel(L2CAPChannelCoordinator.control(c))
        }
    }

    func unpublish(_ id: String) -> ControlReply {
        if let e = coordinator.unpublish(id) { return .failure(e) }
        context.logger.info("L2CAP channel \"\(id)\" unpublished")
        updateServers()
        return .success
    }

    func setListeners(_ counts: [String: Int]) {
        coordinator.listeners = counts
        updateServers()
    }

    /// Tells the transport which channels to accept (when they changed).
    func updateServers() {
        guard let servers = coordinator.serversToAccept() else { return }
        context.stack.setL2CAPChannelServers(servers, now: context.now)
    }

    /// A central opened an app's channel: hand its socket to a program listening for it.
    func opened(_ channel: L2CAPChannelOpened, central: PeripheralConnection?) {
        let logger = context.logger
        let who = central.map { "\($0.address)" } ?? "a central"
        guard let socket = transport.takeL2CAPChannel(channel.ticket) else {
            logger.warning("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm)) but its socket is gone (\(channel.ticket))")
            return
        }
        if let handler, handler(channel, socket, central.map { "\($0.address)" } ?? "unknown") {
            logger.info("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm), MTU \(channel.peerMTU)); handed to a listening program")
            return
        }
        logger.warning("\(who) opened L2CAP channel \"\(channel.server)\" (PSM \(channel.psm)) but no listening program can take it (none listens, or each has \(L2CAPChannelHandover.maximumPassing) channels it has not taken yet); closed")
        _ = close(socket)
    }
}
