import CBlueZ
import GattCore
import Testing

@testable import GattTransport

/// The kernel transport's app channel servers: which listening sockets a new server set
/// closes and opens, and what each socket is set to. The sockets themselves run in
/// scripts/kernel-vm-test (the host has no Bluetooth).
@Suite("Kernel L2CAP channel servers")
struct KernelL2CAPTests {
    static let stream = L2CAPChannelServer(id: "stream", psm: 0x0081, security: .encryption, mtu: 2048)
    static let logs = L2CAPChannelServer(id: "logs", psm: 0x0082)

    static func listening(_ servers: L2CAPChannelServer...) -> [String: L2CAPChannelServer] {
        Dictionary(uniqueKeysWithValues: servers.map { ($0.id, $0) })
    }

    @Test func firstSetOpensEveryServerInOrder() {
        let plan = KernelL2CAPServerPlan(listening: [:], wanted: [Self.stream, Self.logs])
        #expect(plan.close == [])
        #expect(plan.open == [Self.stream, Self.logs])
    }

    @Test func sameSetChangesNothing() {
        let plan = KernelL2CAPServerPlan(listening: Self.listening(Self.stream, Self.logs), wanted: [Self.logs, Self.stream])
        #expect(plan.isEmpty)
    }

    /// A server nobody listens for any more: its socket closes, so the kernel refuses its PSM.
    @Test func removedServerIsClosed() {
        let plan = KernelL2CAPServerPlan(listening: Self.listening(Self.stream, Self.logs), wanted: [Self.logs])
        #expect(plan.close == ["stream"])
        #expect(plan.open == [])
        #expect(KernelL2CAPServerPlan(listening: Self.listening(Self.stream, Self.logs), wanted: []).close == ["logs", "stream"])
    }

    /// PSM, security and MTU are set on the listening socket before listen (the accepted
    /// channels inherit them): a change is a new socket.
    @Test func changedServerIsReopened() {
        var stricter = Self.stream
        stricter.security = .authentication
        var bigger = Self.logs
        bigger.mtu = 4096
        let plan = KernelL2CAPServerPlan(listening: Self.listening(Self.stream, Self.logs), wanted: [stricter, bigger])
        #expect(plan.close == ["logs", "stream"])
        #expect(plan.open == [stricter, bigger])
    }

    /// A PSM moving to another id: the old socket closes before the new one binds it.
    @Test func psmMovingBetweenIdsIsFreedFirst() {
        let renamed = L2CAPChannelServer(id: "files", psm: Self.stream.psm, security: .encryption)
        let plan = KernelL2CAPServerPlan(listening: Self.listening(Self.stream), wanted: [renamed])
        #expect(plan.close == ["stream"])
        #expect(plan.open == [renamed])
    }

    /// An id given twice: the first counts (one listening socket per id).
    @Test func duplicateIdsOpenOnce() {
        var other = Self.stream
        other.psm = 0x0090
        let plan = KernelL2CAPServerPlan(listening: [:], wanted: [Self.stream, other])
        #expect(plan.open == [Self.stream])
        #expect(KernelL2CAPServerPlan(listening: Self.listening(Self.stream), wanted: [Self.stream, other]).isEmpty)
    }

    /// BT_SECURITY per channel: the kernel refuses a central's request on a link below it
    /// (LE Credit Based Connection Response, Insufficient Authentication).
    @Test func securityLevels() {
        #expect(L2CAPChannelSecurity.none.kernelLevel == CBLUEZ_BT_SECURITY_LOW)
        #expect(L2CAPChannelSecurity.encryption.kernelLevel == CBLUEZ_BT_SECURITY_MEDIUM)
        #expect(L2CAPChannelSecurity.authentication.kernelLevel == CBLUEZ_BT_SECURITY_HIGH)
        #expect([CBLUEZ_BT_SECURITY_LOW, CBLUEZ_BT_SECURITY_MEDIUM, CBLUEZ_BT_SECURITY_HIGH] == [1, 2, 3])
    }

    /// The PSM is little-endian in sockaddr_l2, on the adapter's LE address.
    @Test func listeningAddressCarriesThePSM() {
        let adapter = KernelBDAddress(BluetoothAddress("00:AA:01:00:00:00")!, type: .lePublic)
        let address = KernelSocket.l2capAddress(adapter, psm: 0x0081)
        var psm = address.l2_psm
        #expect(withUnsafeBytes(of: &psm) { Array($0) } == [0x81, 0x00])
        #expect(address.l2_cid == 0)
        #expect(address.l2_bdaddr_type == CBLUEZ_BDADDR_LE_PUBLIC)
        #expect(KernelBDAddress(address.l2_bdaddr, type: .lePublic) == adapter)
    }
}
