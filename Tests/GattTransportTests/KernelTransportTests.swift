import CBlueZ
import GattCore
import GattHost
import NIOCore
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import GattTransport

/// The kernel transport's pure parts and its poll loop (over AF_UNIX SOCK_SEQPACKET pairs,
/// which keep packet boundaries like the kernel's L2CAP sockets). The sockets themselves
/// are tested in the kernel-vm VM: scripts/kernel-vm-test.
@Suite("Kernel transport")
struct KernelTransportTests {
    @Test func commandCompleteIsMatchedByOpcode() {
        let answer = KernelCommandAnswer(packet: [0x04, 0x0E, 0x04, 0x01, 0x0A, 0x20, 0x00][...])
        #expect(answer == KernelCommandAnswer(packet: [0x04, 0x0E, 0x04, 0x01, 0x0A, 0x20, 0x00][...]))
        #expect(answer?.opcode == 0x200A)
        #expect(answer?.status == 0x00)
        #expect(answer?.returnParameters == [0x00])
        let features = KernelCommandAnswer(packet: [0x04, 0x0E, 0x0C, 0x01, 0x03, 0x20, 0x00, 0x0B, 0, 0, 0, 0, 0, 0, 0][...])
        #expect(features?.returnParameters == [0x00, 0x0B, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func commandStatusCarriesItsStatus() {
        let answer = KernelCommandAnswer(packet: [0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20][...])
        #expect(answer?.opcode == 0x200D)
        #expect(answer?.status == 0x0C)
        #expect(answer?.returnParameters == [0x0C])
    }

    @Test func malformedAnswersAreIgnored() {
        #expect(KernelCommandAnswer(packet: [0x04, 0x0E, 0x04, 0x01, 0x0A][...]) == nil)  // shorter than its length
        #expect(KernelCommandAnswer(packet: [0x04, 0x0E, 0x02, 0x01, 0x0A][...]) == nil)  // no opcode
        #expect(KernelCommandAnswer(packet: [0x02, 0x0E, 0x04, 0x01, 0x0A, 0x20, 0x00][...]) == nil)  // ACL
        #expect(KernelCommandAnswer(packet: [0x04, 0x05, 0x04, 0x00, 0x2A, 0x00, 0x13][...]) == nil)  // other event
        #expect(KernelCommandAnswer(packet: [][...]) == nil)
    }

    @Test func stackInternalDeviceEvents() {
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00]) == .registered(index: 2))
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00]) == .unregistered(index: 0))
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00]) == .up(index: 0))
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x01, 0x00, 0x04, 0x00, 0x01, 0x00]) == .down(index: 1))
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00]) == nil)  // suspend
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x06, 0x02, 0x00, 0x03, 0x00, 0x00, 0x00]) == nil)  // not SI_DEVICE
        #expect(KernelAdapterEvent(packet: [0x04, 0xFD, 0x04, 0x01, 0x00, 0x03, 0x00]) == nil)  // truncated
    }

    @Test func linkEvents() {
        #expect(
            KernelAdapterEvent(packet: [0x04, 0x05, 0x04, 0x00, 0x2A, 0x00, 0x13])
                == .disconnectionComplete(status: 0, handle: 42, reason: 0x13))
        // LE Connection Complete as btvirt sends it: handle 42, peripheral, public peer 00:AA:01:01:00:01.
        let complete: [UInt8] = [
            0x04, 0x3E, 0x13, 0x01, 0x00, 0x2A, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00,
            0x28, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00,
        ]
        let peer = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic)
        // Interval 0x28 (50 ms), latency 0, timeout 0x2A (420 ms); LE 1M and 27 octets each way.
        let link = LinkParameters.atConnection(connectionInterval: 0x28, peripheralLatency: 0, supervisionTimeout: 0x2A)
        #expect(KernelAdapterEvent(packet: complete) == .leConnectionComplete(status: 0, handle: 42, role: 1, peer: peer, link: link))
        var enhanced = complete
        enhanced[3] = 0x0A
        enhanced[8] = 0x03  // random identity → random
        // Too short for the enhanced event's parameters (two RPAs come first): no link values.
        #expect(
            KernelAdapterEvent(packet: enhanced)
                == .leConnectionComplete(status: 0, handle: 42, role: 1, peer: KernelBDAddress(peer.address, type: .leRandom), link: nil))
        var report = complete
        report[3] = 0x02  // LE Advertising Report
        #expect(KernelAdapterEvent(packet: report) == nil)
        #expect(KernelAdapterEvent(packet: Array(complete.prefix(10))) == nil)
    }

    /// The LE Meta subevents `LinkProcedures` takes (Vol 4 Part E §7.7.65.3, .7, .12).
    @Test func linkProcedureEvents() {
        // LE Connection Update Complete: success, handle 42, interval 12 (15 ms), latency 0, timeout 200 (2 s).
        #expect(
            KernelAdapterEvent(packet: [0x04, 0x3E, 0x0A, 0x03, 0x00, 0x2A, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00])
                == .linkProcedure(.connectionUpdateComplete(status: .success, handle: 42, connectionInterval: 12, peripheralLatency: 0, supervisionTimeout: 200)))
        // LE PHY Update Complete: success, handle 42, LE 2M both ways.
        #expect(
            KernelAdapterEvent(packet: [0x04, 0x3E, 0x06, 0x0C, 0x00, 0x2A, 0x00, 0x02, 0x02])
                == .linkProcedure(.phyUpdateComplete(status: .success, handle: 42, txPHY: 2, rxPHY: 2)))
        // LE Data Length Change: handle 42, 251 octets and 2120 µs each way.
        #expect(
            KernelAdapterEvent(packet: [0x04, 0x3E, 0x0B, 0x07, 0x2A, 0x00, 0xFB, 0x00, 0x48, 0x08, 0xFB, 0x00, 0x48, 0x08])
                == .linkProcedure(.dataLengthChange(handle: 42, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)))
        // Truncated: nothing.
        #expect(KernelAdapterEvent(packet: [0x04, 0x3E, 0x05, 0x0C, 0x00, 0x2A, 0x00, 0x02]) == nil)
    }

    @Test func encryptionEvents() {
        // Encryption Change (v1): status, handle 42, Encryption_Enabled 0x01 (AES-CCM).
        #expect(KernelAdapterEvent(packet: [0x04, 0x08, 0x04, 0x00, 0x2A, 0x00, 0x01]) == .encryptionChanged(status: 0, handle: 42))
        // v2 adds Encryption_Key_Size; the handle's top bits (PB/BC flags) are not the handle.
        #expect(KernelAdapterEvent(packet: [0x04, 0x59, 0x05, 0x00, 0x2A, 0x30, 0x01, 0x10]) == .encryptionChanged(status: 0, handle: 42))
        // Encryption Key Refresh Complete: status, handle.
        #expect(KernelAdapterEvent(packet: [0x04, 0x30, 0x03, 0x00, 0x2A, 0x00]) == .encryptionChanged(status: 0, handle: 42))
        // A failed encryption (PIN or Key Missing) is reported with its status.
        #expect(KernelAdapterEvent(packet: [0x04, 0x08, 0x04, 0x06, 0x2A, 0x00, 0x00]) == .encryptionChanged(status: 0x06, handle: 42))
        #expect(KernelAdapterEvent(packet: [0x04, 0x08, 0x02, 0x00, 0x2A]) == nil)  // no full handle
        #expect(KernelAdapterEvent(packet: [0x04, 0x19, 0x07, 1, 2, 3, 4, 5, 6, 7]) == nil)  // 0x19 shares 0x59's filter bit
    }

    @Test func encryptionEventsPassTheMonitorsFilter() {
        var filter = hci_filter()
        cbluez_filter_clear(&filter)
        for e in [KernelHCIEventCode.encryptionChange, KernelHCIEventCode.encryptionChangeV2, KernelHCIEventCode.encryptionKeyRefreshComplete] {
            cbluez_filter_set_event(&filter, Int32(e))
        }
        #expect(cbluez_filter_test_event(&filter, 0x08) == 1)
        #expect(cbluez_filter_test_event(&filter, 0x30) == 1)
        #expect(cbluez_filter_test_event(&filter, 0x59) == 1)
        #expect(cbluez_filter_test_event(&filter, 0x05) == 0)
    }

    @Test func bdaddrIsLittleEndian() {
        let address = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:02")!, type: .leRandom)
        var kernel = address.bdaddr
        let raw = withUnsafeBytes(of: &kernel) { Array($0) }
        #expect(raw == [0x02, 0x00, 0x01, 0x01, 0xAA, 0x00])
        #expect(KernelBDAddress(kernel, type: .leRandom) == address)
        #expect(address.description == "00:AA:01:01:00:02 (random)")
        #expect(address.type.hciAddressType == .random)
        #expect(KernelBDAddress.AddressType.lePublic.hciAddressType == .public)
    }

    @Test func kernelSecurityLevels() {
        #expect(SecurityLevelValue(kernelLevel: 0, keySize: 0) == SecurityLevelValue(kernelLevel: 1, keySize: 0))
        #expect(SecurityLevelValue(kernelLevel: 1, keySize: 0).level == .low)
        #expect(SecurityLevelValue(kernelLevel: 2, keySize: 16).level == .medium)
        #expect(SecurityLevelValue(kernelLevel: 2, keySize: 16).keySize == 16)
        #expect(SecurityLevelValue(kernelLevel: 3, keySize: 16).level == .high)
        #expect(SecurityLevelValue(kernelLevel: 4, keySize: 16).level == .high)
        #expect(SecurityLevel.medium.kernelLevel == 2)
    }

    @Test func adapterNames() {
        #expect(KernelSocket.deviceIndex(named: "hci0") == 0)
        #expect(KernelSocket.deviceIndex(named: "hci12") == 12)
        #expect(KernelSocket.deviceIndex(named: "hci") == nil)
        #expect(KernelSocket.deviceIndex(named: "usb0") == nil)
    }

    @Test func bluetoothdIsFoundByComm() throws {
        let root = "/tmp/gattd-kernel-proc-\(getpid())"
        defer { _ = system("rm -rf \(root)") }
        func process(_ pid: Int, _ comm: String) {
            mkdir(root, 0o755)
            mkdir("\(root)/\(pid)", 0o755)
            let fd = open("\(root)/\(pid)/comm", O_CREAT | O_WRONLY | O_TRUNC, 0o644)
            _ = comm.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        process(12, "bash\n")
        process(7, "bluetoothd-x\n")
        #expect(BluetoothdDetector.runningPID(procRoot: root) == nil)
        #expect(BluetoothdDetector.warning(adapter: "hci0", procRoot: root) == nil)
        process(345, "bluetoothd\n")
        #expect(BluetoothdDetector.runningPID(procRoot: root) == 345)
        #expect(
            BluetoothdDetector.warning(adapter: "hci1", procRoot: root)
                == "bluetoothd (pid 345) is running and serves GATT on hci1 itself: stop bluetoothd (systemctl stop bluetooth) "
                + "or give gattd the controller exclusively with --transport user:hci1")
        #expect(BluetoothdDetector.runningPID(procRoot: "\(root)/missing") == nil)
    }

    /// A bearer over a SOCK_SEQPACKET pair: one PDU per packet both ways, EOF closes it once.
    @Test func bearerKeepsPacketBoundaries() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &ends) == 0)
        let poller = try SocketPoller()
        defer { poller.shutdown() }
        let group = MultiThreadedEventLoopGroup.singleton
        let peer = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic)
        let bearer = KernelATTBearer(fd: ends[0], peer: peer, poller: poller)
        #expect(bearer.incomingMTU == 672)  // no L2CAP options on a Unix socket: the kernel default
        #expect(throws: KernelTransportError.self) { try bearer.securityLevel() }

        let received = Mutex<[[UInt8]]>([])
        let closed = Mutex<[KernelATTBearer.CloseReason]>([])
        bearer.start(
            on: group.next(), onPDU: { pdu in received.withLock { $0.append(pdu) } },
            onClose: { reason in closed.withLock { $0.append(reason) } })

        let first: [UInt8] = [0x02, 0x05, 0x02]
        let second: [UInt8] = [0x0A, 0x03, 0x00]
        #expect(write(ends[1], first, first.count) == 3)
        #expect(write(ends[1], second, second.count) == 3)
        try bearer.send([0x03, 0x05, 0x02])
        try bearer.send([0x0B] + Array(repeating: 0x42, count: 600))
        var buffer = [UInt8](repeating: 0, count: 2048)
        #expect(read(ends[1], &buffer, buffer.count) == 3)
        #expect(Array(buffer.prefix(3)) == [0x03, 0x05, 0x02])
        #expect(read(ends[1], &buffer, buffer.count) == 601)

        for _ in 0..<200 where received.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(received.withLock { $0 } == [first, second])

        close(ends[1])
        for _ in 0..<200 where closed.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(closed.withLock { $0 } == [.disconnected])
        #expect(throws: KernelTransportError(.disconnected, "ATT bearer to 00:AA:01:01:00:01 (public) is closed")) {
            try bearer.send([0x1B, 0x03, 0x00])
        }
        bearer.close()  // after a remote close: no second onClose, no double close
        try await Task.sleep(for: .milliseconds(50))
        #expect(closed.withLock { $0.count } == 1)
    }
}
