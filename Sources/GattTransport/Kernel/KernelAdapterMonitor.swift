import CBlueZ
import GattCore
import GattHost
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel tells about an adapter and its LE links.
public enum KernelAdapterEvent: Sendable, Equatable {
    /// hciN appeared (plugged in, btvirt/vhci opened...).
    case registered(index: Int)
    /// hciN went away (unplugged). Its raw sockets are dead: reopen once it is back.
    case unregistered(index: Int)
    /// hciN came up (HCIDEVUP, `hciconfig up`, power on).
    case up(index: Int)
    /// hciN went down: its advertising and connections are gone.
    case down(index: Int)
    /// LE (Enhanced) Connection Complete, Core Spec Vol 4 Part E §7.7.65.1 / §7.7.65.10;
    /// `link`: the new link's parameters (nil when the event is too short to carry them).
    case leConnectionComplete(status: UInt8, handle: UInt16, role: UInt8, peer: KernelBDAddress, link: LinkParameters? = nil)
    /// LE Connection Update Complete, LE PHY Update Complete or LE Data Length Change: a
    /// link's parameters changed, or a procedure on it ended (`LinkProcedures`).
    case linkProcedure(HCILEMetaEvent)
    /// Disconnection Complete, Core Spec Vol 4 Part E §7.7.5.
    case disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8)
    /// Encryption Change (v1 §7.7.8, v2 §7.7.8.2) or Encryption Key Refresh Complete (§7.7.39):
    /// the link's encryption started, stopped or was refreshed (the kernel's SMP drives it).
    case encryptionChanged(status: UInt8, handle: UInt16)

    /// Parses a packet (H4 indicator first) read from a raw HCI socket; nil for anything else.
    public init?(packet: [UInt8]) {
        guard packet.count >= 3, packet[0] == 0x04, packet.count >= 3 + Int(packet[2]) else { return nil }
        let body = Array(packet[3..<(3 + Int(packet[2]))])
        switch packet[1] {
        case KernelHCIEventCode.stackInternal:
            // evt_stack_internal { u16 type = EVT_SI_DEVICE (1); evt_si_device { u16 event; u16 dev_id } }
            guard body.count >= 6, body[0] == 0x01, body[1] == 0x00 else { return nil }
            let event = UInt16(body[2]) | UInt16(body[3]) << 8
            let index = Int(UInt16(body[4]) | UInt16(body[5]) << 8)
            switch event {
            case 1: self = .registered(index: index)
            case 2: self = .unregistered(index: index)
            case 3: self = .up(index: index)
            case 4: self = .down(index: index)
            default: return nil
            }
        case KernelHCIEventCode.disconnectionComplete:
            guard body.count >= 4 else { return nil }
            self = .disconnectionComplete(status: body[0], handle: (UInt16(body[1]) | UInt16(body[2]) << 8) & 0x0FFF, reason: body[3])
        case KernelHCIEventCode.encryptionChange, KernelHCIEventCode.encryptionChangeV2, KernelHCIEventCode.encryptionKeyRefreshComplete:
            // status, connection handle first in all three.
            guard body.count >= 3 else { return nil }
            self = .encryptionChanged(status: body[0], handle: (UInt16(body[1]) | UInt16(body[2]) << 8) & 0x0FFF)
        case KernelHCIEventCode.leMeta:
            let meta = try? HCILEMetaEvent(decoding: body)
            switch meta {
            case .connectionUpdateComplete, .phyUpdateComplete, .dataLengthChange:
                self = .linkProcedure(meta!)
                return
            default:
                break
            }
            // Subevent 0x01 LE Connection Complete and 0x0A LE Enhanced Connection Complete share
            // the first fields: status, handle, role, peer address type, peer address.
            guard body.count >= 12, body[0] == 0x01 || body[0] == 0x0A else { return nil }
            let type: KernelBDAddress.AddressType = body[5] & 0x01 == 0 ? .lePublic : .leRandom
            guard let address = BluetoothAddress(littleEndian: body[6..<12]) else { return nil }
            let peer = KernelBDAddress(address, type: type)
            let link = meta?.connectionComplete.map {
                LinkParameters.atConnection(connectionInterval: $0.connectionInterval, peripheralLatency: $0.peripheralLatency, supervisionTimeout: $0.supervisionTimeout)
            }
            self = .leConnectionComplete(
                status: body[1], handle: (UInt16(body[2]) | UInt16(body[3]) << 8) & 0x0FFF, role: body[4], peer: peer, link: link)
        default:
            return nil
        }
    }
}

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
