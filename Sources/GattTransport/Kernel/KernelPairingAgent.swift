import CBlueZ
import GattCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The adapter's mgmt event reader (one mgmt socket, HCI_CHANNEL_CONTROL, for the adapter): the
/// keys a pairing produced (New Long Term Key, New IRK, New CSRK...) and the kernel's pairing
/// questions (User Confirmation / Passkey Request, Passkey Notify) go to the transport as
/// ``KernelManagementEvent``s; the transport's answers (User Confirmation / Passkey (Negative)
/// Reply) are written on the same socket with ``send(_:parameters:)``.
///
/// Just Works confirmations (User Confirmation Request with Confirm_Hint 1) are accepted at
/// once, on the poll thread, as bluetoothd's agent would: since the 2024 fix for CVE-2024-8805
/// ("Bluetooth: Always request for user confirmation for Just Works", backported to the stable
/// kernels), the kernel's SMP asks user space to confirm every LE Just Works pairing and waits.
/// With bluetoothd stopped nobody else answers, pairing stalls and the central disconnects with
/// Authentication Failure after the 30 s SMP timeout. There is nobody to ask about Just Works
/// (it has no value to compare).
public final class KernelPairingAgent: Sendable {
    /// One answered Just Works request, for the log.
    public struct Confirmation: Sendable, Equatable {
        public var peer: KernelBDAddress
        /// False when the reply could not be written.
        public var accepted: Bool
    }

    public let index: Int
    private let fd: Int32
    private let poller: SocketPoller

    /// Opens and binds the mgmt socket. Needs CAP_NET_ADMIN to receive the requests and keys
    /// (the kernel sends them to trusted sockets only).
    public init(index: Int, poller: SocketPoller) throws(KernelTransportError) {
        let fd = try KernelSocket.openHCI(nonBlocking: true)
        guard KernelSocket.bindHCI(fd, device: CBLUEZ_HCI_DEV_NONE, channel: CBLUEZ_HCI_CHANNEL_CONTROL) == 0 else {
            throw .system("bind(HCI_CHANNEL_CONTROL) for the pairing agent", closing: fd)
        }
        self.index = index
        self.fd = fd
        self.poller = poller
    }

    /// Reads events on the poll thread; `onConfirmation` and `onEvent` run on `eventLoop`. Call once.
    public func start(
        on eventLoop: any EventLoop, onConfirmation: @escaping @Sendable (Confirmation) -> Void,
        onEvent: @escaping @Sendable (KernelManagementEvent) -> Void
    ) {
        let fd = self.fd
        let index = self.index
        poller.watch(fd) {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
            guard count > 0 else { return false }
            guard let event = KernelManagementEvent(packet: Array(buffer.prefix(count)), index: index) else { return true }
            if case .userConfirmationRequest(let peer, justWorks: true, _) = event {
                let reply = KernelManagement.packet(.userConfirmationReply, index: index, parameters: KernelKeyCommands.address(peer))
                let confirmation = Confirmation(peer: peer, accepted: write(fd, reply, reply.count) == reply.count)
                eventLoop.execute { onConfirmation(confirmation) }
            } else {
                eventLoop.execute { onEvent(event) }
            }
            return true
        }
    }

    /// Writes one mgmt command (an answer to a prompt); false when it could not be written.
    /// Its Command Complete comes back on this socket and is not waited for.
    @discardableResult
    public func send(_ opcode: KernelManagement.Opcode, parameters: [UInt8]) -> Bool {
        let packet = KernelManagement.packet(opcode, index: index, parameters: parameters)
        return write(fd, packet, packet.count) == packet.count
    }

    public func close() {
        poller.unwatch(fd, closing: true)
    }
}
