import GattCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

// Apps' LE credit-based channels on the kernel transport: one kernel L2CAP listening socket
// per server (KernelL2CAPListener); the kernel runs the channel (signalling, credits,
// segmentation, the security check) and each accepted socket goes up as it is.
extension KernelPeripheralTransport {
    /// Listens on exactly these servers' PSMs while the adapter is up (now, and at every open);
    /// the kernel refuses other PSMs (LE_PSM not supported). Accepted channels stay open.
    public func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        l2cap.wanted = servers
        if lifecycle.isReady { reconcileL2CAPServers() }
    }

    /// Closes and opens listening sockets until they match `l2cap.wanted` (KernelL2CAPServerPlan).
    /// A server the kernel refuses (PSM taken, no capability) is logged once and tried again
    /// at the next call or open.
    func reconcileL2CAPServers() {
        guard lifecycle.isReady, let poller, let address = listener?.address else { return }
        let plan = KernelL2CAPServerPlan(listening: l2cap.listeners.mapValues(\.server), wanted: l2cap.wanted)
        for id in plan.close {
            guard let old = l2cap.listeners.removeValue(forKey: id) else { continue }
            old.close()
            logger.debug("\(adapterName): stopped listening for L2CAP channel \"\(id)\" (PSM \(old.server.psm))")
        }
        let wantedIDs = Set(l2cap.wanted.map(\.id))
        l2cap.refusals = l2cap.refusals.filter { wantedIDs.contains($0.key) }
        for server in plan.open {
            let listener: KernelL2CAPListener
            do {
                listener = try KernelL2CAPListener(server: server, address: address, adapter: adapterName, poller: poller)
            } catch {
                let message = "\(error)"
                if l2cap.refusals[server.id] != message {
                    l2cap.refusals[server.id] = message
                    logger.warning("cannot listen for \(message); centrals opening it are refused (LE_PSM not supported)")
                }
                continue
            }
            l2cap.refusals[server.id] = nil
            l2cap.listeners[server.id] = listener
            if case .unavailable(let code) = listener.modeOption, !l2cap.modeOptionNoted {
                l2cap.modeOptionNoted = true
                logger.info(
                    "\(adapterName): the kernel takes no BT_MODE option (\(errnoDescription(code)); it needs the bluetooth module's enable_ecred on Linux 5.7+); its LE L2CAP sockets bound to a PSM are LE credit-based all the same"
                )
            }
            listener.start(on: eventLoop) { [weak self] channel in self?.l2capChannelAccepted(channel, from: listener, attemptsLeft: 10) }
            logger.debug("\(adapterName): listening for L2CAP channel \"\(server.id)\" on PSM \(server.psm) (security \(server.security.rawValue), MTU \(server.mtu))")
        }
    }

    /// Stops listening (the adapter went, or the transport closes); `l2cap.wanted` stays for the next open.
    /// Closes the listening sockets, and the accepted channels nobody took.
    func closeL2CAPListeners() {
        for id in l2cap.listeners.keys.sorted() { l2cap.listeners.removeValue(forKey: id)?.close() }
        for socket in channelSockets.removeAll() { _ = Glibc.close(socket) }
    }

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { channelSockets.take(ticket) }

    /// A channel the kernel accepted: reported on the central's connection. The kernel accepts
    /// the ATT bearer of a link before any channel of it, but the two sockets' accepts reach the
    /// loop in either order: a channel whose link is not known yet waits for it a little.
    private func l2capChannelAccepted(_ channel: KernelL2CAPChannel, from listener: KernelL2CAPListener, attemptsLeft: Int) {
        guard lifecycle.isReady, let onEvent else {
            _ = Glibc.close(channel.fd)
            return
        }
        let server = listener.server
        let known = l2capConnection(of: channel)
        guard known != nil || attemptsLeft == 0 else {
            eventLoop.scheduleTask(in: .milliseconds(20)) { [weak self] in
                guard let self else {
                    _ = Glibc.close(channel.fd)
                    return
                }
                self.l2capChannelAccepted(channel, from: listener, attemptsLeft: attemptsLeft - 1)
            }
            return
        }
        // No ATT link for it (its bearer was refused, or is gone): an id no connection has, so the
        // peripheral reports the channel without a central (the handle's, as `accepted` would give).
        let id = known ?? links.freeConnectionID(handle: channel.handle)
        let opened = L2CAPChannelOpened(
            server: server.id, psm: server.psm, peerMTU: channel.peerMTU ?? L2CAPChannelServer.mtuRange.lowerBound,
            mtu: channel.mtu ?? server.mtu, ticket: channelSockets.keep(channel.fd))
        let unknown = known == nil ? "; no ATT link of it is known" : ""
        logger.debug(
            "\(id): \(channel.peer) opened L2CAP channel \"\(server.id)\" (PSM \(server.psm), MTU \(opened.mtu), theirs \(opened.peerMTU))\(unknown)")
        onEvent(.l2capChannelOpened(id, opened))
    }

    /// The connection whose ATT bearer is on the channel's link: same connection handle, or
    /// (when the kernel did not tell a handle) same peer address and type.
    func l2capConnection(of channel: KernelL2CAPChannel) -> ConnectionID? {
        links.connection(handle: channel.handle, peer: channel.peer)
    }
}

/// The kernel transport's app channel servers.
struct KernelL2CAPServers {
    /// The servers asked for (`setL2CAPChannelServers`), listened for while the adapter is up.
    var wanted: [L2CAPChannelServer] = []
    /// The listening sockets, by server id.
    var listeners: [String: KernelL2CAPListener] = [:]
    /// Why a server has no listening socket (logged once per message), by server id.
    var refusals: [String: String] = [:]
    /// The kernel's missing BT_MODE has been said.
    var modeOptionNoted = false
}
