import CBlueZ
import GattCore
import GattHost
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Watches one adapter so the daemon can react when it goes down or away and comes back
/// (re-open ``KernelHCIController`` and advertise again), and when LE links come and go.
///
/// Two raw HCI sockets: one on HCI_DEV_NONE with a filter on the Linux "stack internal"
/// event (0xFD), which the kernel sends to such sockets for every adapter's register /
/// unregister / up / down; one bound to hciN with a filter on Disconnection Complete, the
/// encryption events and LE Meta events. The second one dies when hciN is unregistered and is re-bound when
/// hciN comes back up.
public final class KernelAdapterMonitor: Sendable {
    public let index: Int
    private let poller: SocketPoller
    private let deviceSocket: Int32
    /// The socket bound to hciN; nil while the adapter is gone.
    private let linkSocket = Mutex<Int32?>(nil)
    private let sink = Mutex<(@Sendable (KernelAdapterEvent) -> Void)?>(nil)

    public init(index: Int, poller: SocketPoller) throws(KernelTransportError) {
        let fd = try KernelSocket.openHCI(nonBlocking: true)
        guard KernelSocket.bindHCI(fd, device: CBLUEZ_HCI_DEV_NONE, channel: CBLUEZ_HCI_CHANNEL_RAW) == 0 else {
            throw .system("bind(HCI_DEV_NONE, HCI_CHANNEL_RAW)", closing: fd)
        }
        guard KernelSocket.setEventFilter(fd, events: [KernelHCIEventCode.stackInternal]) == 0 else {
            throw .system("setsockopt(HCI_FILTER)", closing: fd)
        }
        self.index = index
        self.poller = poller
        self.deviceSocket = fd
    }

    /// Delivers events for this adapter (and its links) on `eventLoop`. Call once.
    public func start(on eventLoop: any EventLoop, onEvent: @escaping @Sendable (KernelAdapterEvent) -> Void) {
        let deliver: @Sendable (KernelAdapterEvent) -> Void = { event in eventLoop.execute { onEvent(event) } }
        sink.withLock { $0 = deliver }
        let fd = deviceSocket
        let index = self.index
        poller.watch(fd) { [self] in
            guard let packet = Self.readPacket(fd) else { return true }
            guard let event = KernelAdapterEvent(packet: packet) else { return true }
            switch event {
            case .registered(index), .up(index):
                openLinkSocket()
            case .unregistered(index):
                closeLinkSocket()
            default:
                break
            }
            switch event {
            case .registered(let i), .unregistered(let i), .up(let i), .down(let i):
                if i == index { deliver(event) }
            default:
                break
            }
            return true
        }
        openLinkSocket()
    }

    public func close() {
        closeLinkSocket()
        poller.unwatch(deviceSocket, closing: true)
        sink.withLock { $0 = nil }
    }

    private func openLinkSocket() {
        linkSocket.withLock { current in
            guard current == nil, let deliver = sink.withLock({ $0 }) else { return }
            guard let fd = try? KernelSocket.openHCI(nonBlocking: true) else { return }
            guard KernelSocket.bindHCI(fd, device: UInt16(truncatingIfNeeded: index), channel: CBLUEZ_HCI_CHANNEL_RAW) == 0,
                KernelSocket.setEventFilter(
                    fd,
                    events: [
                        KernelHCIEventCode.disconnectionComplete, KernelHCIEventCode.encryptionChange,
                        KernelHCIEventCode.encryptionChangeV2, KernelHCIEventCode.encryptionKeyRefreshComplete,
                        KernelHCIEventCode.leMeta,
                    ]) == 0
            else {
                Glibc.close(fd)
                return
            }
            current = fd
            poller.watch(fd) { [self] in
                var buffer = [UInt8](repeating: 0, count: 260)
                let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
                guard count > 0 else {
                    // EPIPE: the adapter was unregistered. Forget this socket; `up` re-opens one.
                    linkSocket.withLock { if $0 == fd { $0 = nil } }
                    return false
                }
                if let event = KernelAdapterEvent(packet: Array(buffer.prefix(count))) { deliver(event) }
                return true
            }
        }
    }

    private func closeLinkSocket() {
        linkSocket.withLock { current in
            if let fd = current { poller.unwatch(fd, closing: true) }
            current = nil
        }
    }

    private static func readPacket(_ fd: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 260)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? Array(buffer.prefix(count)) : nil
    }
}
