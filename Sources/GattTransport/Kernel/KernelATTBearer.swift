import CBlueZ
import GattCore
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One LE connection's ATT bearer on the kernel's L2CAP ATT channel: one ATT PDU per packet.
public final class KernelATTBearer: Sendable {
    /// Why the bearer's input ended.
    public enum CloseReason: Sendable, Equatable {
        /// The link went down (ECONNRESET from read: the central disconnected or the link was lost).
        case disconnected
        /// read() failed with this errno.
        case error(errno: Int32)
    }

    public let peer: KernelBDAddress
    /// The socket's incoming MTU (L2CAP_OPTIONS imtu): the largest PDU the kernel passes up.
    public let incomingMTU: Int
    private let fd: Int32
    private let poller: SocketPoller
    /// false once closed, by either side; guards every use of `fd` outside the poll thread.
    private let isOpen = Mutex(true)

    init(fd: Int32, peer: KernelBDAddress, poller: SocketPoller) {
        self.fd = fd
        self.peer = peer
        self.poller = poller
        var options = l2cap_options()
        var length = socklen_t(MemoryLayout<l2cap_options>.size)
        let ok = getsockopt(fd, CBLUEZ_SOL_L2CAP, CBLUEZ_L2CAP_OPTIONS, &options, &length) == 0
        self.incomingMTU = ok && options.imtu > 0 ? Int(options.imtu) : 672
    }

    /// Starts reading: each ATT PDU is passed to `onPDU` on `eventLoop`; when the link goes
    /// down `onClose` runs once (not after a local ``close()``). Call once.
    public func start(
        on eventLoop: any EventLoop, onPDU: @escaping @Sendable ([UInt8]) -> Void,
        onClose: @escaping @Sendable (CloseReason) -> Void
    ) {
        let fd = self.fd
        let bufferSize = max(incomingMTU, 1024)
        poller.watch(fd) { [self] in
            var buffer = [UInt8](repeating: 0, count: bufferSize)
            let count = recv(fd, &buffer, bufferSize, Int32(MSG_DONTWAIT))
            if count > 0 {
                let pdu = Array(buffer.prefix(count))
                eventLoop.execute { onPDU(pdu) }
                return true
            }
            let reason: CloseReason
            if count == 0 {
                reason = .disconnected
            } else {
                let code = errno
                switch code {
                case EAGAIN, EINTR: return true
                case ECONNRESET, ENOTCONN, EPIPE, ETIMEDOUT, EHOSTDOWN: reason = .disconnected
                default: reason = .error(errno: code)
                }
            }
            let wasOpen = isOpen.withLock { open in
                defer { open = false }
                return open
            }
            if wasOpen { eventLoop.execute { onClose(reason) } }
            return false  // the poller closes the fd
        }
    }

    /// Sends one ATT PDU (one packet). Does not block for long: when the socket buffer is
    /// full it waits up to a second for room. Throws `.disconnected` once the link is gone.
    public func send(_ pdu: [UInt8]) throws(KernelTransportError) {
        let fd = self.fd
        try isOpen.withLock { (open: inout Bool) throws(KernelTransportError) in
            guard open else { throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is closed") }
            while true {
                let sent = Glibc.send(fd, pdu, pdu.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                if sent == pdu.count { return }
                let code = errno
                if sent >= 0 {
                    throw KernelTransportError(.systemCall(errno: EMSGSIZE), "ATT PDU of \(pdu.count) bytes to \(peer): only \(sent) sent")
                }
                switch code {
                case EINTR:
                    continue
                case EAGAIN:
                    guard KernelSocket.waitWritable(fd, milliseconds: 1000) else {
                        throw KernelTransportError(.systemCall(errno: EAGAIN), "ATT bearer to \(peer): send buffer full for 1 s")
                    }
                case ECONNRESET, ENOTCONN, EPIPE:
                    throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is disconnected")
                default:
                    throw .system("send ATT PDU to \(peer)", errno: code)
                }
            }
        }
    }

    /// Sends one ATT PDU (one packet) without waiting: false when the socket's send buffer
    /// is full (nothing was sent; ask ``whenWritable(on:_:)`` and try again).
    /// Throws `.disconnected` once the link is gone.
    public func trySend(_ pdu: [UInt8]) throws(KernelTransportError) -> Bool {
        let fd = self.fd
        return try isOpen.withLock { (open: inout Bool) throws(KernelTransportError) -> Bool in
            guard open else { throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is closed") }
            while true {
                let sent = Glibc.send(fd, pdu, pdu.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                if sent == pdu.count { return true }
                let code = errno
                if sent >= 0 {
                    throw KernelTransportError(.systemCall(errno: EMSGSIZE), "ATT PDU of \(pdu.count) bytes to \(peer): only \(sent) sent")
                }
                switch code {
                case EINTR: continue
                case EAGAIN: return false
                case ECONNRESET, ENOTCONN, EPIPE:
                    throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is disconnected")
                default:
                    throw .system("send ATT PDU to \(peer)", errno: code)
                }
            }
        }
    }

    /// Runs `body` on `eventLoop` once the socket has room again (or failed). Call after
    /// ``trySend(_:)`` returned false.
    public func whenWritable(on eventLoop: any EventLoop, _ body: @escaping @Sendable () -> Void) {
        let open = isOpen.withLock { $0 }
        guard open else { return }
        poller.whenWritable(fd) { eventLoop.execute(body) }
    }

    /// The LE connection's HCI handle (getsockopt SOL_L2CAP/L2CAP_CONNINFO), for HCI Disconnect.
    public func connectionHandle() -> UInt16? {
        let fd = self.fd
        return isOpen.withLock { open -> UInt16? in
            guard open else { return nil }
            var info = l2cap_conninfo()
            var length = socklen_t(MemoryLayout<l2cap_conninfo>.size)
            // L2CAP_CONNINFO = 0x02 (<bluetooth/l2cap.h>, a macro CBlueZ does not re-export).
            guard getsockopt(fd, CBLUEZ_SOL_L2CAP, 0x02, &info, &length) == 0 else { return nil }
            return info.hci_handle
        }
    }

    /// The central's MTU now (BT_SNDMTU), nil when the socket does not say (or is closed): on
    /// an Enhanced ATT channel it grows when the central reconfigures it (the kernel answers
    /// the L2CAP Credit Based Reconfigure Request itself).
    func sendMTU() -> Int? {
        let fd = self.fd
        return isOpen.withLock { open -> Int? in
            guard open else { return nil }
            var value: UInt16 = 0
            var length = socklen_t(MemoryLayout<UInt16>.size)
            guard getsockopt(fd, CBLUEZ_SOL_BLUETOOTH, BT_SNDMTU, &value, &length) == 0, value > 0 else { return nil }
            return Int(value)
        }
    }

    /// The link's security level (getsockopt SOL_BLUETOOTH/BT_SECURITY): encrypted once the
    /// kernel's SMP has paired or restored a bond.
    public func securityLevel() throws(KernelTransportError) -> SecurityLevelValue {
        let fd = self.fd
        return try isOpen.withLock { (open: inout Bool) throws(KernelTransportError) -> SecurityLevelValue in
            guard open else { throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is closed") }
            var security = bt_security()
            var length = socklen_t(MemoryLayout<bt_security>.size)
            guard getsockopt(fd, CBLUEZ_SOL_BLUETOOTH, CBLUEZ_BT_SECURITY, &security, &length) == 0 else {
                throw .system("getsockopt(BT_SECURITY) for \(peer)", errno: errno)
            }
            return SecurityLevelValue(kernelLevel: security.level, keySize: security.key_size)
        }
    }

    /// Asks for a higher security level (setsockopt BT_SECURITY). For a peripheral the kernel
    /// sends an SMP Security Request, so the central pairs (or re-encrypts with its bond);
    /// the new level shows in ``securityLevel()`` once encryption is on. The kernel answers
    /// EINVAL when it has no SMP for the link (seen with btvirt controllers in the kernel-vm).
    public func requestSecurity(_ level: SecurityLevel) throws(KernelTransportError) {
        let fd = self.fd
        try isOpen.withLock { (open: inout Bool) throws(KernelTransportError) in
            guard open else { throw KernelTransportError(.disconnected, "ATT bearer to \(peer) is closed") }
            var security = bt_security()
            security.level = UInt8(level.kernelLevel)
            guard setsockopt(fd, CBLUEZ_SOL_BLUETOOTH, CBLUEZ_BT_SECURITY, &security, socklen_t(MemoryLayout<bt_security>.size)) == 0
            else {
                let code = errno
                if code == EINVAL {
                    // The kernel's smp_conn_security() refused: no SMP channel on this link
                    // (dmesg: "security requested but not available").
                    throw KernelTransportError(
                        .systemCall(errno: code),
                        "the kernel cannot start pairing with \(peer) (setsockopt BT_SECURITY \(level): SMP not available on this link)")
                }
                throw .system("setsockopt(BT_SECURITY \(level)) for \(peer)", errno: code)
            }
        }
    }

    /// Disconnects (shutdown) and releases the socket. No `onClose` follows.
    public func close() {
        let wasOpen = isOpen.withLock { open in
            defer { open = false }
            return open
        }
        guard wasOpen else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        poller.unwatch(fd, closing: true)
    }
}
