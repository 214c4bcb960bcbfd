import CBlueZ
import GattCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Answers the kernel's pairing questions for one adapter, as bluetoothd's agent would: a
/// mgmt socket (HCI_CHANNEL_CONTROL) that accepts every User Confirmation Request
/// (mgmt-api.txt event 0x000F) with User Confirmation Reply (0x001C).
///
/// Why: since the 2024 fix for CVE-2024-8805 ("Bluetooth: Always request for user
/// confirmation for Just Works", backported to the stable kernels), the kernel's SMP asks user
/// space to confirm every LE Just Works pairing and waits. With bluetoothd stopped nobody
/// answers, pairing stalls and the central disconnects with Authentication Failure after the
/// 30 s SMP timeout. gattd's IO capability is NoInputNoOutput (the kernel's default), so Just
/// Works is the only method a central can pick, and there is no user to ask.
public final class KernelPairingAgent: Sendable {
    /// One answered request, for the log.
    public struct Confirmation: Sendable, Equatable {
        public var peer: KernelBDAddress
        /// The kernel's confirm_hint: true for Just Works (no value to compare).
        public var justWorks: Bool
        /// The numeric-comparison value (0 for Just Works).
        public var value: UInt32
        /// False when the reply could not be written.
        public var accepted: Bool
    }

    public let index: Int
    private let fd: Int32
    private let poller: KernelPoller

    /// Opens and binds the mgmt socket. Needs CAP_NET_ADMIN to receive the requests (the kernel
    /// sends them to trusted sockets only).
    public init(index: Int, poller: KernelPoller) throws(KernelTransportError) {
        let fd = try KernelSocket.openHCI(nonBlocking: true)
        guard KernelSocket.bindHCI(fd, device: CBLUEZ_HCI_DEV_NONE, channel: CBLUEZ_HCI_CHANNEL_CONTROL) == 0 else {
            throw .system("bind(HCI_CHANNEL_CONTROL) for the pairing agent", closing: fd)
        }
        self.index = index
        self.fd = fd
        self.poller = poller
    }

    /// Answers requests on the poll thread; `onConfirmation` runs on `eventLoop`. Call once.
    public func start(on eventLoop: any EventLoop, onConfirmation: @escaping @Sendable (Confirmation) -> Void) {
        let fd = self.fd
        let index = self.index
        poller.watch(fd) {
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count < 0 && (errno == EAGAIN || errno == EINTR) { return true }
            guard count > 0 else { return false }
            guard let request = Self.userConfirmationRequest(Array(buffer.prefix(count)), index: index) else { return true }
            let reply = Self.userConfirmationReply(request, index: index)
            let written = write(fd, reply, reply.count)
            let confirmation = Confirmation(
                peer: request.peer, justWorks: request.hint, value: request.value, accepted: written == reply.count)
            eventLoop.execute { onConfirmation(confirmation) }
            return true
        }
    }

    public func close() {
        poller.unwatch(fd, closing: true)
    }

    /// A User Confirmation Request event (0x000F) for `index`: address (6), address type (1),
    /// confirm hint (1), value (4, little-endian). Nil for anything else.
    static func userConfirmationRequest(_ packet: [UInt8], index: Int) -> (peer: KernelBDAddress, rawAddress: [UInt8], hint: Bool, value: UInt32)? {
        guard packet.count >= 6 + 12 else { return nil }
        let event = UInt16(packet[0]) | UInt16(packet[1]) << 8
        let eventIndex = Int(UInt16(packet[2]) | UInt16(packet[3]) << 8)
        let length = Int(UInt16(packet[4]) | UInt16(packet[5]) << 8)
        guard event == 0x000F, eventIndex == index, length >= 12 else { return nil }
        let body = Array(packet[6..<18])
        guard let address = BluetoothAddress(littleEndian: body[0..<6]) else { return nil }
        let type = KernelBDAddress.AddressType(rawValue: body[6]) ?? .lePublic
        let value = KernelManagement.littleEndian32(body, at: 8)
        return (KernelBDAddress(address, type: type), Array(body[0..<7]), body[7] != 0, value)
    }

    /// User Confirmation Reply (0x001C) for the request: its address and address type.
    static func userConfirmationReply(
        _ request: (peer: KernelBDAddress, rawAddress: [UInt8], hint: Bool, value: UInt32), index: Int
    ) -> [UInt8] {
        let ix = UInt16(truncatingIfNeeded: index)
        return [0x1C, 0x00, UInt8(ix & 0xFF), UInt8(ix >> 8), 0x07, 0x00] + request.rawAddress
    }
}
