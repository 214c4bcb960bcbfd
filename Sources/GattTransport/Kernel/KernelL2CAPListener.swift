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
    private let poller: SocketPoller
    /// false once closed, by ``close()`` or by the poller (a broken listener): the fd is closed once.
    private let isOpen = Mutex(true)

    /// The channels' L2CAP mode.
    enum Mode: Sendable, Equatable {
        /// LE Credit Based Flow Control (Core Vol 3 Part A §3.4): an app's channels. The kernel
        /// uses it for an LE PSM even without BT_MODE (see ``ModeOption/unavailable(errno:)``).
        case leCreditBased
        /// Enhanced Credit Based Flow Control (BT_MODE_EXT_FLOWCTL): EATT's channels. The
        /// kernel must take BT_MODE (its `enable_ecred` on), else the listener is not made.
        case enhancedCreditBased
    }

    /// Binds `address` (the adapter's LE address) and `server.psm`, sets the mode, security
    /// and MTU (the accepted channels inherit them) and listens.
    init(
        server: L2CAPChannelServer, address: KernelBDAddress, adapter: String, poller: SocketPoller, mode: Mode = .leCreditBased
    ) throws(KernelTransportError) {
        let what =
            mode == .leCreditBased
            ? "L2CAP channel \"\(server.id)\" (PSM \(server.psm)) on \(adapter)" : "\(server.id) (PSM 0x\(psmHex(server.psm))) on \(adapter)"
        let fd = socket(
            CBLUEZ_AF_BLUETOOTH, KernelSocket.seqpacket | KernelSocket.cloexec | KernelSocket.nonblock, CBLUEZ_BTPROTO_L2CAP)
        guard fd >= 0 else { throw .system("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) for \(what)", errno: errno) }
        try Self.bind(fd, address, psm: server.psm, what: what, mode: mode)
        // After bind (the kernel takes BT_MODE only in the bound state), before listen.
        switch mode {
        case .leCreditBased:
            var value = UInt8(BT_MODE_LE_FLOWCTL)
            if setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, BT_MODE, &value, socklen_t(MemoryLayout<UInt8>.size)) == 0 {
                modeOption = .set
            } else {
                let code = errno
                guard code == ENOPROTOOPT || code == EINVAL else { throw .system("setsockopt(BT_MODE LE_FLOWCTL) for \(what)", closing: fd) }
                modeOption = .unavailable(errno: code)
            }
        case .enhancedCreditBased:
            try Self.setEnhancedMode(fd, what: what)
            modeOption = .set
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

    /// bind(2) `fd` to `address` and `psm`; closes `fd` when it fails.
    private static func bind(_ fd: Int32, _ address: KernelBDAddress, psm: UInt16, what: String, mode: Mode) throws(KernelTransportError) {
        var local = KernelSocket.l2capAddress(address, psm: psm)
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        guard bound != 0 else { return }
        let code = errno
        Glibc.close(fd)
        switch code {
        case EADDRINUSE:
            throw KernelTransportError(.systemCall(errno: code), "\(what): another socket already listens on PSM \(psm) of \(address)")
        case EACCES:
            let advice =
                mode == .leCreditBased
                ? "use a dynamic PSM (0x0080-0x00FF) or grant the capability" : "grant gattd the capability (systemd: AmbientCapabilities=CAP_NET_BIND_SERVICE)"
            throw KernelTransportError(.permissionDenied, "\(what): PSMs below 0x0080 are SIG-assigned and need CAP_NET_BIND_SERVICE; \(advice)")
        default:
            throw .system("bind(\(what))", errno: code)
        }
    }

    /// BT_MODE = BT_MODE_EXT_FLOWCTL on a bound socket; closes `fd` when the kernel refuses.
    private static func setEnhancedMode(_ fd: Int32, what: String) throws(KernelTransportError) {
        var value = UInt8(BT_MODE_EXT_FLOWCTL)
        guard setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, BT_MODE, &value, socklen_t(MemoryLayout<UInt8>.size)) == 0 else {
            throw .system("setsockopt(BT_MODE EXT_FLOWCTL) for \(what) (the kernel's enable_ecred is off?)", closing: fd)
        }
    }

    /// Whether a socket on `psm` in Enhanced Credit Based mode can be bound (to any LE
    /// address: the adapter is not known yet): nil if so, else the kernel's refusal. The
    /// socket is closed at once (it never listens).
    static func probeEnhancedCreditBased(psm: UInt16) -> KernelTransportError? {
        let what = "PSM 0x\(psmHex(psm)) (Enhanced Credit Based)"
        let fd = socket(CBLUEZ_AF_BLUETOOTH, KernelSocket.seqpacket | KernelSocket.cloexec, CBLUEZ_BTPROTO_L2CAP)
        guard fd >= 0 else { return .system("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) for \(what)", errno: errno) }
        do throws(KernelTransportError) {
            try bind(fd, KernelBDAddress(.zero, type: .lePublic), psm: psm, what: what, mode: .enhancedCreditBased)
            try setEnhancedMode(fd, what: what)
        } catch {
            return error
        }
        Glibc.close(fd)
        return nil
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

/// A PSM as four hex digits ("0027").
func psmHex(_ psm: UInt16) -> String {
    let digits = String(psm, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
