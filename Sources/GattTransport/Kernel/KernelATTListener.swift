import CBlueZ
import GattCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Listens for LE connections on the ATT fixed channel (CID 4, Core Spec Vol 3 Part A §2.1)
/// of one adapter: an L2CAP SOCK_SEQPACKET socket bound to the adapter's address.
/// Each accepted connection becomes a ``KernelATTBearer``.
///
/// The kernel runs the LE link, L2CAP and SMP; gattd only sees ATT PDUs, one per packet.
public final class KernelATTListener: Sendable {
    public let address: KernelBDAddress
    private let fd: Int32
    private let poller: SocketPoller
    private let adapter: String

    /// Binds and listens. `address` is the adapter's (from ``KernelHCIController/address``);
    /// its `type` picks `BDADDR_LE_PUBLIC` or `BDADDR_LE_RANDOM`.
    ///
    /// Refuses to start while bluetoothd runs (unless `allowBluetoothd`): the 6.1 kernel lets
    /// several sockets bind the ATT fixed channel (no EADDRINUSE) and hands each new LE
    /// connection to one of them, so gattd and bluetoothd would split the centrals between
    /// them. The error says to stop bluetoothd or use `user:hciN`. (Kernels that do
    /// refuse the second bind with EADDRINUSE get the same advice.)
    public init(
        address: KernelBDAddress, adapter: String, poller: SocketPoller, allowBluetoothd: Bool = false
    ) throws(KernelTransportError) {
        if !allowBluetoothd, let pid = BluetoothdDetector.runningPID() {
            throw KernelTransportError(
                .bluetoothdRunning,
                "bluetoothd (pid \(pid)) is running and serves GATT on \(adapter) itself: "
                    + BluetoothdDetector.advice(adapter: adapter))
        }
        let fd = socket(
            CBLUEZ_AF_BLUETOOTH, KernelSocket.seqpacket | KernelSocket.cloexec | KernelSocket.nonblock,
            CBLUEZ_BTPROTO_L2CAP)
        guard fd >= 0 else { throw .system("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)", errno: errno) }
        var local = KernelSocket.l2capAddress(address, cid: CBLUEZ_L2CAP_CID_ATT)
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        if bound != 0 {
            let code = errno
            Glibc.close(fd)
            if code == EADDRINUSE {
                let who = BluetoothdDetector.runningPID().map { "bluetoothd (pid \($0))" } ?? "another program"
                throw KernelTransportError(
                    .bluetoothdRunning,
                    "the ATT channel of \(adapter) (\(address)) is already taken by \(who): "
                        + BluetoothdDetector.advice(adapter: adapter))
            }
            throw .system("bind(L2CAP ATT channel on \(adapter) \(address))", errno: code)
        }
        guard listen(fd, 8) == 0 else {
            throw .system("listen(L2CAP ATT channel on \(adapter))", closing: fd)
        }
        self.fd = fd
        self.address = address
        self.poller = poller
        self.adapter = adapter
    }

    /// Accepts connections on the poll thread; `onAccept` runs on `eventLoop`. Call once.
    public func start(on eventLoop: any EventLoop, onAccept: @escaping @Sendable (KernelATTBearer) -> Void) {
        let fd = self.fd
        let poller = self.poller
        poller.watch(fd) {
            var peer = sockaddr_l2()
            var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
            let connection = withUnsafeMutablePointer(to: &peer) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(fd, $0, &length)
                }
            }
            if connection >= 0 {
                _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            }
            guard connection >= 0 else {
                switch errno {
                case EAGAIN, EINTR, ECONNABORTED, EPROTO: return true
                default: return false  // the listener is broken; stop watching
                }
            }
            let type = KernelBDAddress.AddressType(rawValue: peer.l2_bdaddr_type) ?? .lePublic
            let bearer = KernelATTBearer(fd: connection, peer: KernelBDAddress(peer.l2_bdaddr, type: type), poller: poller)
            eventLoop.execute { onAccept(bearer) }
            return true
        }
    }

    /// Stops listening (established bearers stay up).
    public func close() {
        poller.unwatch(fd, closing: true)
    }
}

/// A bearer's security as the kernel reports it.
public struct SecurityLevelValue: Sendable, Equatable {
    /// GattCore's level: kernel LOW/SDP → .low, MEDIUM → .medium, HIGH/FIPS → .high.
    public var level: SecurityLevel
    /// Encryption key size in octets (0 when not encrypted).
    public var keySize: Int

    init(kernelLevel: UInt8, keySize: UInt8) {
        switch Int32(kernelLevel) {
        case CBLUEZ_BT_SECURITY_MEDIUM: level = .medium
        case CBLUEZ_BT_SECURITY_HIGH, CBLUEZ_BT_SECURITY_FIPS: level = .high
        default: level = .low
        }
        self.keySize = Int(keySize)
    }
}

extension SecurityLevel {
    /// The kernel's BT_SECURITY_* value for this level.
    var kernelLevel: Int32 {
        switch self {
        case .low: CBLUEZ_BT_SECURITY_LOW
        case .medium: CBLUEZ_BT_SECURITY_MEDIUM
        case .high: CBLUEZ_BT_SECURITY_HIGH
        }
    }
}
