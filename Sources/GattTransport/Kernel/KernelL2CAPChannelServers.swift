import GattCore
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Apps' LE credit-based channel servers on one adapter through kernel L2CAP sockets: one
/// listening socket per server (`KernelL2CAPListener`), kept equal to the servers asked for
/// (`KernelL2CAPServerPlan`), and the accepted channels' sockets until the daemon takes them.
/// Shared by the kernel transport and the BlueZ back end: kernel LE sockets work beside
/// bluetoothd, which listens on no app's PSM. Confined to the owner's event loop.
public final class KernelL2CAPChannelServers {
    let adapterName: String
    let logger: Logger
    /// The servers asked for, listened for whenever the owner says the adapter is up.
    public private(set) var wanted: [L2CAPChannelServer] = []
    /// The listening sockets, by server id.
    private var listeners: [String: KernelL2CAPListener] = [:]
    /// Why a server has no listening socket (logged once per message), by server id.
    private var refusals: [String: String] = [:]
    /// The kernel's missing BT_MODE has been said.
    private var modeOptionNoted = false
    private var sockets = ChannelSockets()

    public init(adapterName: String, logger: Logger) {
        self.adapterName = adapterName
        self.logger = logger
    }

    /// The servers to listen for from now on (`reconcile` makes it so).
    public func want(_ servers: [L2CAPChannelServer]) { wanted = servers }

    /// Closes and opens listening sockets on the adapter's LE `address` until they match
    /// `wanted`. A server the kernel refuses (PSM taken, no capability) is logged once and
    /// tried again at the next call. `onAccept` runs on `eventLoop` for each accepted channel
    /// and owns its socket.
    public func reconcile(
        address: KernelBDAddress, poller: SocketPoller, eventLoop: any EventLoop,
        onAccept: @escaping @Sendable (KernelL2CAPChannel, L2CAPChannelServer) -> Void
    ) {
        let plan = KernelL2CAPServerPlan(listening: listeners.mapValues(\.server), wanted: wanted)
        for id in plan.close {
            guard let old = listeners.removeValue(forKey: id) else { continue }
            old.close()
            logger.debug("\(adapterName): stopped listening for L2CAP channel \"\(id)\" (PSM \(old.server.psm))")
        }
        let wantedIDs = Set(wanted.map(\.id))
        refusals = refusals.filter { wantedIDs.contains($0.key) }
        for server in plan.open {
            let listener: KernelL2CAPListener
            do {
                listener = try KernelL2CAPListener(server: server, address: address, adapter: adapterName, poller: poller)
            } catch {
                let message = "\(error)"
                if refusals[server.id] != message {
                    refusals[server.id] = message
                    logger.warning("cannot listen for \(message); centrals opening it are refused (LE_PSM not supported)")
                }
                continue
            }
            refusals[server.id] = nil
            listeners[server.id] = listener
            if case .unavailable(let code) = listener.modeOption, !modeOptionNoted {
                modeOptionNoted = true
                logger.info(
                    "\(adapterName): the kernel takes no BT_MODE option (\(errnoDescription(code)); it needs the bluetooth module's enable_ecred on Linux 5.7+); its LE L2CAP sockets bound to a PSM are LE credit-based all the same"
                )
            }
            listener.start(on: eventLoop) { channel in onAccept(channel, server) }
            logger.debug("\(adapterName): listening for L2CAP channel \"\(server.id)\" on PSM \(server.psm) (security \(server.security.rawValue), MTU \(server.mtu))")
        }
    }

    /// Stops listening (the adapter went, or the owner closes); `wanted` stays for the next
    /// `reconcile`. Closes the listening sockets, and the accepted channels nobody took.
    public func close() {
        for id in listeners.keys.sorted() { listeners.removeValue(forKey: id)?.close() }
        for socket in sockets.removeAll() { _ = Glibc.close(socket) }
    }

    /// Keeps an accepted channel's socket for the daemon, and names it.
    public func keep(_ channel: KernelL2CAPChannel) -> L2CAPChannelTicket { sockets.keep(channel.fd) }

    /// The socket of a channel reported, handed over (the caller closes it); nil when taken already.
    public func take(_ ticket: L2CAPChannelTicket) -> Int32? { sockets.take(ticket) }

    /// The `.l2capChannelOpened` of an accepted channel, its socket kept for the daemon.
    public func opened(_ channel: KernelL2CAPChannel, on server: L2CAPChannelServer) -> L2CAPChannelOpened {
        L2CAPChannelOpened(
            server: server.id, psm: server.psm, peerMTU: channel.peerMTU ?? L2CAPChannelServer.mtuRange.lowerBound,
            mtu: channel.mtu ?? server.mtu, ticket: keep(channel))
    }
}
