import CBlueZ
import GattCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Listens for an app's LE credit-based channels (Core Vol 3 Part A §4.22, LE Credit Based
/// Connection Request) on one PSM of one adapter: a kernel L2CAP SOCK_SEQPACKET socket bound
/// to the adapter's LE address and the server's PSM. The kernel answers the central's request
/// (PSM, security, credits, MTU/MPS, segmentation); each accepted channel is a socket of its
/// own that carries one SDU per packet, which gattd hands up without touching the data.
final class KernelL2CAPListener: Sendable {
    /// What the kernel did with the BT_MODE option.
    enum ModeOption: Sendable, Equatable {
        /// BT_MODE = BT_MODE_LE_FLOWCTL was taken.
        case set
        /// The kernel has no BT_MODE for this socket (errno): before 5.7, or 5.7 and later
        /// with the `enable_ecred` module parameter off (l2cap_sock.c answers ENOPROTOOPT).
        /// Binding an LE address and a PSM made the socket LE credit-based all the same.
        case unavailable(errno: Int32)
    }

    let server: L2CAPChannelServer
    let modeOption: ModeOption
    private let fd: Int32
    private let poller: KernelPoller
    /// false once closed, by ``close()`` or by the poller (a broken listener): the fd is closed once.
    private let isOpen = Mutex(true)

    /// Binds `address` (the adapter's LE address) and `server.psm`, sets the mode, security
    /// and MTU (the accepted channels inherit them) and listens.
    init(server: L2CAPChannelServer, address: KernelBDAddress, adapter: String, poller: KernelPoller) throws(KernelTransportError) {
        let what = "L2CAP channel \"\(server.id)\" (PSM \(server.psm)) on \(adapter)"
        let fd = socket(
            CBLUEZ_AF_BLUETOOTH, KernelSocket.seqpacket | KernelSocket.cloexec | KernelSocket.nonblock, CBLUEZ_BTPROTO_L2CAP)
        guard fd >= 0 else { throw .system("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) for \(what)", errno: errno) }
        var local = KernelSocket.l2capAddress(address, psm: server.psm)
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        if bound != 0 {
            let code = errno
            Glibc.close(fd)
            switch code {
            case EADDRINUSE:
                throw KernelTransportError(.systemCall(errno: code), "\(what): another socket already listens on PSM \(server.psm) of \(address)")
            case EACCES:
                throw KernelTransportError(
                    .permissionDenied,
                    "\(what): PSMs below 0x0080 are SIG-assigned and need CAP_NET_BIND_SERVICE; use a dynamic PSM (0x0080-0x00FF) or grant the capability")
            default:
                throw .system("bind(\(what))", errno: code)
            }
        }
        // After bind (the kernel takes BT_MODE only in the bound state), before listen.
        var mode = UInt8(BT_MODE_LE_FLOWCTL)
        if setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, BT_MODE, &mode, socklen_t(MemoryLayout<UInt8>.size)) == 0 {
            modeOption = .set
        } else {
            let code = errno
            guard code == ENOPROTOOPT || code == EINVAL else { throw .system("setsockopt(BT_MODE LE_FLOWCTL) for \(what)", closing: fd) }
            modeOption = .unavailable(errno: code)
        }
        var security = bt_security()
        security.level = UInt8(server.security.kernelLevel)
        guard setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, CBLUEZ_BT_SECURITY, &security, socklen_t(MemoryLayout<bt_security>.size)) == 0 else {
            throw .system("setsockopt(BT_SECURITY \(server.security.rawValue)) for \(what)", closing: fd)
        }
        var mtu = UInt16(clamping: server.mtu)
        guard setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, BT_RCVMTU, &mtu, socklen_t(MemoryLayout<UInt16>.size)) == 0 else {
            throw .system("setsockopt(BT_RCVMTU \(server.mtu)) for \(what)", closing: fd)
        }
        guard listen(fd, 8) == 0 else { throw .system("listen(\(what))", closing: fd) }
        self.server = server
        self.fd = fd
        self.poller = poller
    }

    /// Accepts channels on the poll thread; `onAccept` runs on `eventLoop` and owns the
    /// channel's socket. Call once.
    func start(on eventLoop: any EventLoop, onAccept: @escaping @Sendable (KernelL2CAPChannel) -> Void) {
        let fd = self.fd
        poller.watch(fd) { [self] in
            var peer = sockaddr_l2()
            var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
            let channel = withUnsafeMutablePointer(to: &peer) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(fd, $0, &length)
                }
            }
            // (accept4 needs _GNU_SOURCE, which Glibc's module does not define.)
            if channel >= 0 {
                _ = fcntl(channel, F_SETFD, FD_CLOEXEC)
                _ = fcntl(channel, F_SETFL, fcntl(channel, F_GETFL) | O_NONBLOCK)
            }
            guard channel >= 0 else {
                switch errno {
                case EAGAIN, EINTR, ECONNABORTED, EPROTO: return true
                default:
                    // The listener is broken: stop watching (the poller closes the fd).
                    isOpen.withLock { $0 = false }
                    return false
                }
            }
            let type = KernelBDAddress.AddressType(rawValue: peer.l2_bdaddr_type) ?? .lePublic
            let accepted = KernelL2CAPChannel(fd: channel, peer: KernelBDAddress(peer.l2_bdaddr, type: type))
            eventLoop.execute { onAccept(accepted) }
            return true
        }
    }

    /// Stops listening; channels already accepted stay open (the kernel drops the ones
    /// it had connected but nobody accepted yet).
    func close() {
        let wasOpen = isOpen.withLock { open in
            defer { open = false }
            return open
        }
        if wasOpen { poller.unwatch(fd, closing: true) }
    }
}

/// A channel the kernel accepted on a ``KernelL2CAPListener``: a connected L2CAP socket,
/// non-blocking and close-on-exec, one SDU per packet.
struct KernelL2CAPChannel: Sendable {
    let fd: Int32
    let peer: KernelBDAddress
    /// The LE connection's HCI handle (L2CAP_CONNINFO), to find the central's ATT link.
    let handle: UInt16?
    /// The central's MTU (BT_SNDMTU: the largest SDU it takes) and ours (BT_RCVMTU).
    let peerMTU: Int?
    let mtu: Int?

    init(fd: Int32, peer: KernelBDAddress) {
        self.fd = fd
        self.peer = peer
        var info = l2cap_conninfo()
        var length = socklen_t(MemoryLayout<l2cap_conninfo>.size)
        handle = getsockopt(fd, CBLUEZ_SOL_L2CAP, L2CAP_CONNINFO, &info, &length) == 0 ? info.hci_handle : nil
        peerMTU = Self.mtuOption(fd, BT_SNDMTU)
        mtu = Self.mtuOption(fd, BT_RCVMTU)
    }

    private static func mtuOption(_ fd: Int32, _ option: Int32) -> Int? {
        var value: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        guard getsockopt(fd, CBLUEZ_SOL_BLUETOOTH, option, &value, &length) == 0, value > 0 else { return nil }
        return Int(value)
    }
}
