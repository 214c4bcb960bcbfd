import GattCore
import GattTransport

#if canImport(Glibc)
import Glibc
#endif

// Apps' LE credit-based channels beside bluetoothd: bluetoothd listens on no app's PSM, so
// gattd listens on the adapter's LE address with kernel L2CAP sockets, as the kernel
// transport does (`KernelL2CAPChannelServers`, shared with it); the kernel runs each channel.

extension BlueZPeripheralTransport {
    /// Listens on exactly these servers' PSMs while gattd serves through bluetoothd.
    public func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        eventLoop.execute {
            self.l2cap.want(servers)
            self.reconcileL2CAPServers()
        }
    }

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { l2cap.take(ticket) }

    /// Opens and closes listening sockets to match the servers asked for, once the adapter's
    /// address is known and the application registered (nothing is listened for before).
    func reconcileL2CAPServers() {
        guard case .open = state, let adapter else { return }
        if l2cap.wanted.isEmpty, poller == nil { return }
        let poller: SocketPoller
        if let existing = self.poller {
            poller = existing
        } else {
            do throws(SocketPoller.SetupError) {
                poller = try SocketPoller()
            } catch {
                return logger.warning("cannot listen for L2CAP channels on hci\(index): \(error)")
            }
            self.poller = poller
        }
        let address = KernelBDAddress(adapter.address, type: adapter.randomAddress ? .leRandom : .lePublic)
        l2cap.reconcile(address: address, poller: poller, eventLoop: eventLoop) { channel, server in
            self.l2capChannelAccepted(channel, on: server)
        }
    }

    /// The central is the device bluetoothd reports at the channel's peer address (brought up
    /// now if bluetoothd has not said it connected yet).
    private func l2capChannelAccepted(_ channel: KernelL2CAPChannel, on server: L2CAPChannelServer) {
        guard case .open = state, let (id, events) = devices.connection(address: channel.peer.address) else {
            _ = Glibc.close(channel.fd)
            return
        }
        for e in events { emit(e) }
        let opened = l2cap.opened(channel, on: server)
        logger.debug("\(id): \(channel.peer) opened L2CAP channel \"\(server.id)\" (PSM \(server.psm), MTU \(opened.mtu), theirs \(opened.peerMTU))")
        emit(.l2capChannelOpened(id, opened))
    }
}
