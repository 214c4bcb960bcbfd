import GattCore
import GattTransport
import Logging
import NIOCore

/// Apps' LE credit-based channels beside bluetoothd: bluetoothd listens on no app's PSM, so
/// gattd listens on the adapter's LE address with kernel L2CAP sockets, as the kernel
/// transport does (`KernelL2CAPChannelServers`, shared with it); the kernel runs each channel.
/// An I/O shell of the BlueZ transport's, confined to its event loop: the transport says
/// when it serves on an adapter, and which central an accepted channel's peer is.
final class BlueZL2CAPChannels: @unchecked Sendable {
    /// The servers asked for, their listening sockets, and the accepted channels' sockets
    /// until the daemon takes them.
    let servers: KernelL2CAPChannelServers
    /// The poll thread of the sockets, from the first server asked for until `shutdown`.
    private var poller: SocketPoller?
    private let index: Int
    private let logger: Logger

    init(adapter index: Int, logger: Logger) {
        self.index = index
        self.logger = logger
        servers = KernelL2CAPChannelServers(adapterName: "hci\(index)", logger: logger)
    }

    /// Opens and closes listening sockets on `adapter`'s LE address to match the servers
    /// asked for (nothing is listened for before the transport serves on it); `onAccept`
    /// runs on `eventLoop` for each accepted channel and owns its socket.
    func listen(on adapter: BlueZAdapter, eventLoop: any EventLoop, onAccept: @escaping @Sendable (KernelL2CAPChannel, L2CAPChannelServer) -> Void) {
        if servers.wanted.isEmpty, poller == nil { return }
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
        servers.reconcile(address: address, poller: poller, eventLoop: eventLoop, onAccept: onAccept)
    }

    /// The transport closes: the poll thread ends (the servers asked for stay).
    func shutdown() {
        poller?.shutdown()
        poller = nil
    }
}
