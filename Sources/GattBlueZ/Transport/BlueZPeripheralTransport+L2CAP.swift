import GattCore
import GattTransport

#if canImport(Glibc)
import Glibc
#endif

// Apps' LE credit-based channels beside bluetoothd, through kernel sockets (`BlueZL2CAPChannels`).

extension BlueZPeripheralTransport {
    /// Listens on exactly these servers' PSMs while gattd serves through bluetoothd.
    public func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        eventLoop.execute {
            self.channels.servers.want(servers)
            self.reconcileL2CAPServers()
        }
    }

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { channels.servers.take(ticket) }

    /// Listens for the servers asked for once the application is registered on an adapter.
    func reconcileL2CAPServers() {
        guard let (_, adapter) = life.served else { return }
        channels.listen(on: adapter, eventLoop: eventLoop) { channel, server in self.l2capChannelAccepted(channel, on: server) }
    }

    /// The central is the device bluetoothd reports at the channel's peer address (brought up
    /// now if bluetoothd has not said it connected yet).
    private func l2capChannelAccepted(_ channel: KernelL2CAPChannel, on server: L2CAPChannelServer) {
        guard life.served != nil, let (id, events) = devices.connection(address: channel.peer.address) else {
            _ = Glibc.close(channel.fd)
            return
        }
        for e in events { emit(e) }
        let opened = channels.servers.opened(channel, on: server)
        logger.debug("\(id): \(channel.peer) opened L2CAP channel \"\(server.id)\" (PSM \(server.psm), MTU \(opened.mtu), theirs \(opened.peerMTU))")
        emit(.l2capChannelOpened(id, opened))
    }
}
