import GattCore
import NIOCore
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import GattTransport

/// The kernel transport's mgmt codec (bring-up, pairing agent) and the bearer's
/// non-blocking send with the poller's writable notification. The kernel side is exercised
/// in the kernel-vm VM (scripts/kernel-vm-test).
@Suite("Kernel management and backpressure")
struct KernelManagementTests {
    @Test func commandPacketLayout() {
        #expect(KernelManagement.packet(.setPowered, index: 1, parameters: [1]) == [0x05, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01])
        #expect(KernelManagement.packet(.readControllerInformation, index: 0, parameters: []) == [0x04, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    /// `connection.preferred` on the kernel path: the adapter's default LE connection
    /// parameters (mgmt Set Default System Configuration, opcode 0x004C, TLVs 0x0017–0x001A).
    @Test func defaultConnectionParametersPacket() {
        let p = LEConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400)
        let tlvs = KernelManagement.connectionParameterTLVs(p)
        #expect(tlvs == [0x17, 0x00, 2, 24, 0, 0x18, 0x00, 2, 40, 0, 0x19, 0x00, 2, 0, 0, 0x1A, 0x00, 2, 0x90, 0x01])
        #expect(KernelManagement.packet(.setDefaultSystemConfiguration, index: 0, parameters: tlvs).prefix(6) == [0x4C, 0x00, 0x00, 0x00, 20, 0x00])
    }

    @Test func answersAreMatchedByOpcodeAndIndex() {
        // Command Complete (0x0001) for Set Powered (0x0005) on index 0: status 0, settings 0x00000211.
        let complete: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x05, 0x00, 0x00, 0x11, 0x02, 0x00, 0x00]
        let answer = KernelManagement.answer(complete, to: .setPowered, index: 0)
        #expect(answer?.status == 0)
        #expect(answer?.parameters == [0x11, 0x02, 0x00, 0x00])
        #expect(KernelManagement.settings(answer?.parameters ?? []) == [.powered, .bondable, .lowEnergy])
        #expect(KernelManagement.answer(complete, to: .setBondable, index: 0) == nil)  // another command
        #expect(KernelManagement.answer(complete, to: .setPowered, index: 1) == nil)  // another adapter
        // Command Status (0x0002): Permission Denied (0x14).
        let status: [UInt8] = [0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x05, 0x00, 0x14]
        #expect(KernelManagement.answer(status, to: .setPowered, index: 0)?.status == 0x14)
        // Truncated: length says 7, 2 bytes present.
        #expect(KernelManagement.answer([0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x05, 0x00], to: .setPowered, index: 0) == nil)
        #expect(KernelManagement.answer([0x01, 0x00], to: .setPowered, index: 0) == nil)
    }

    @Test func controllerInformationSettings() {
        // address (6), version, manufacturer (2), supported 0x0000ffff... , current 0x00000200 (LE only)
        let reply: [UInt8] = [0, 0, 0, 0xAA, 0x01, 0x00, 0x09, 0xF1, 0x05, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00]
        let info = KernelManagement.information(reply)
        #expect(info?.supported.contains(.lowEnergy) == true)
        #expect(info?.current == [.lowEnergy])
        #expect(KernelManagement.information(Array(reply.prefix(16))) == nil)
    }

    @Test func userConfirmationRequestIsAnsweredWithItsAddress() throws {
        // Event 0x000F on index 0: 00:AA:01:01:00:01 LE public, confirm_hint 1, value 0.
        let event: [UInt8] = [0x0F, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01, 0x01, 0, 0, 0, 0]
        let peer = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic)
        #expect(KernelManagementEvent(packet: event, index: 0) == .userConfirmationRequest(peer, justWorks: true, value: 0))
        #expect(
            KernelManagement.packet(.userConfirmationReply, index: 0, parameters: KernelKeyCommands.address(peer))
                == [0x1C, 0x00, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01])
        #expect(KernelManagementEvent(packet: event, index: 1) == nil)
        #expect(KernelManagementEvent(packet: Array(event.prefix(17)), index: 0) == nil)
    }

    /// trySend never blocks: a full socket answers false, and whenWritable fires once the
    /// reader drained it; packets keep their boundaries and order.
    @Test func trySendReportsAFullSocketAndWhenWritableResumes() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &ends) == 0)
        var small: Int32 = 4096
        _ = setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let poller = try SocketPoller()
        defer { poller.shutdown() }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let bearer = KernelATTBearer(
            fd: ends[0], peer: KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic), poller: poller)
        bearer.start(on: loop, onPDU: { _ in }, onClose: { _ in })

        var sent = 0
        let pdu: [UInt8] = [0x1B, 0x12, 0x00] + Array(repeating: 0x55, count: 200)
        while try bearer.trySend(pdu) {
            sent += 1
            #expect(sent < 10_000)
            if sent >= 10_000 { return }
        }
        #expect(sent > 0)
        let woke = Mutex(false)
        bearer.whenWritable(on: loop) { woke.withLock { $0 = true } }
        try await Task.sleep(for: .milliseconds(50))
        #expect(woke.withLock { $0 } == false)  // still full

        var buffer = [UInt8](repeating: 0, count: 1024)
        var drained = 0
        while recv(ends[1], &buffer, buffer.count, Int32(MSG_DONTWAIT)) == pdu.count { drained += 1 }
        #expect(drained == sent)
        for _ in 0..<200 where !woke.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(woke.withLock { $0 })
        #expect(try bearer.trySend([0x1B, 0x12, 0x00, 0x01]))
        #expect(recv(ends[1], &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 4)
        bearer.close()
        close(ends[1])
    }
}
