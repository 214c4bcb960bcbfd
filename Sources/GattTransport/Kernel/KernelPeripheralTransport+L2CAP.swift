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
        l2cap.want(servers)
        if lifecycle.isReady { reconcileL2CAPServers() }
    }

    /// Closes and opens listening sockets until they match the servers asked for.
    func reconcileL2CAPServers() {
        guard lifecycle.isReady, let poller, let address = listener?.address else { return }
        l2cap.reconcile(address: address, poller: poller, eventLoop: eventLoop) { [weak self] channel, server in
            guard let self else { return _ = Glibc.close(channel.fd) }
            self.l2capChannelAccepted(channel, on: server, attemptsLeft: 10)
        }
    }

    /// Stops listening (the adapter went, or the transport closes); the servers asked for stay
    /// for the next open. Closes the accepted channels nobody took.
    func closeL2CAPListeners() { l2cap.close() }

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { l2cap.take(ticket) }

    /// A channel the kernel accepted: reported on the central's connection. The kernel accepts
    /// the ATT bearer of a link before any channel of it, but the two sockets' accepts reach the
    /// loop in either order: a channel whose link is not known yet waits for it a little.
    private func l2capChannelAccepted(_ channel: KernelL2CAPChannel, on server: L2CAPChannelServer, attemptsLeft: Int) {
        guard lifecycle.isReady, let onEvent else {
            _ = Glibc.close(channel.fd)
            return
        }
        let known = l2capConnection(of: channel)
        guard known != nil || attemptsLeft == 0 else {
            eventLoop.scheduleTask(in: .milliseconds(20)) { [weak self] in
                guard let self else {
                    _ = Glibc.close(channel.fd)
                    return
                }
                self.l2capChannelAccepted(channel, on: server, attemptsLeft: attemptsLeft - 1)
            }
            return
        }
        // No ATT link for it (its bearer was refused, or is gone): an id no connection has, so the
        // peripheral reports the channel without a central (the handle's, as `accepted` would give).
        let id = known ?? links.freeConnectionID(handle: channel.handle)
        let opened = l2cap.opened(channel, on: server)
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
