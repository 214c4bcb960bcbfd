import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The Security Manager on the H4 path: SMP frames through the host, LE Long Term Key
/// Requests answered from the pairing or the bonds, Encryption Change raising the ATT
/// server's level (Core Spec Vol 3 Part H, Vol 4 Part E §7.7.65.5, §7.8.25/26, §7.7.8).
@Suite struct HostSecurityTests {
    static let centralIRK = spec("0f0e0d0c 0b0a0908 07060504 03020100")
    static let centralCSRK = spec("a0a1a2a3 a4a5a6a7 a8a9aaab acadaeaf")
    static let identity = BluetoothAddress("00:1B:DC:01:02:03")!

    /// A host with pairing on, 8 LE buffers of 251 octets (an SMP PDU is one packet), connected on 0x40.
    static func connected(_ security: SecurityManagerConfiguration = .init()) -> SecureHarness {
        var c = HostConfiguration.test()
        c.security = security
        var controller = FakeController()
        controller.leBuffers = (251, 8)
        var h = HostHarness(configuration: c, controller: controller)
        h.bringUp()
        h.connect(0x40)
        h.completed([(0x40, UInt16(h.sentACL.count))])
        h.clearLogs()
        var central = ScriptedCentral()
        central.address = SMPDeviceAddress(HostHarness.central, type: .random)
        return SecureHarness(h: h, central: central)
    }

    @Test func justWorksSecureConnectionsPairsEncryptsAndBonds() throws {
        var t = Self.connected()
        let rsp = try #require(t.exchange(.pairingRequest(t.central.features)).first.flatMap(SecureHarness.response))
        let pk = t.exchange(.pairingPublicKey(t.central.keyPair.publicKey.air))
        guard pk.count == 2, case .pairingPublicKey(let air) = pk[0], case .pairingConfirm(let cb) = pk[1] else {
            Issue.record("no public key and Cb: \(pk)")
            return
        }
        let pkb = try #require(SMPPublicKey(air: air))
        #expect(t.h.host.nextDeadline == t.h.now + .seconds(30), "the SMP timer is one of the host's deadlines")
        let na = t.central.nonce()
        guard case .pairingRandom(let nb)? = t.exchange(.pairingRandom(na)).first else { Issue.record("no Nb"); return }
        #expect(SMPCrypto.f4(u: pkb.x, v: t.central.keyPair.publicKey.x, x: nb, z: 0) == cb)
        let checks = t.dhKeyChecks(pkb: pkb, na: na, nb: nb, rsp: rsp)
        #expect(t.exchange(.pairingDHKeyCheck(checks.ea)) == [.pairingDHKeyCheck(checks.eb)])
        // The central encrypts: the controller asks for the LTK, the host gives the pairing's.
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0, encryptedDiversifier: 0)))
        #expect(t.h.sentCommands == [H4Packet(command: .leLongTermKeyRequestReply(handle: 0x40, longTermKey: checks.ltk))])
        #expect(t.h.host.connections[0x40]?.security == .low, "not before Encryption Change")
        t.h.deliver(.encryptionChange(status: .success, handle: 0x40, enabled: 1))
        #expect(t.h.host.connections[0x40]?.security == .medium)
        #expect(t.h.host.connections[0x40]?.keySize == 16)
        #expect(t.h.host.core.connections[ConnectionID(0x40)]?.security == .medium, "reported up through the seam")
        // Phase 3: nothing of ours to distribute; the central's IRK, identity address, CSRK.
        #expect(t.exchange(.identityInformation(irk: Self.centralIRK)) == [])
        #expect(t.exchange(.identityAddressInformation(type: .public, address: Self.identity)) == [])
        t.h.events = []
        #expect(t.exchange(.signingInformation(csrk: Self.centralCSRK)) == [])
        let bond = Bond(
            address: Self.identity, addressType: .public, longTermKey: checks.ltk, keySize: 16, authenticated: false,
            secureConnections: true, peerIRK: Self.centralIRK, peerCSRK: Self.centralCSRK)
        #expect(t.h.events == [.pairing(0x40, .pairingComplete(bond, bonded: true))])
        #expect(t.h.host.host.bonds == [bond], "the host keeps the bond for the next connection")
        #expect(t.h.host.nextDeadline == nil, "no SMP timer after the pairing")
        // The encrypted link reads the encryption-required characteristic.
        t.h.clearLogs()
        t.h.receive([0x0A, 0x17, 0x00], handle: 0x40)
        #expect(t.h.sentPayloads(handle: 0x40) == [[0x0B, 0x55]])
    }

    @Test func bondedCentralReconnectsAndEncryptsWithoutPairing() {
        var t = Self.connected()
        let ltk = Array(0x10...0x1F).map(UInt8.init)
        let bond = Bond(address: HostHarness.central, addressType: .random, longTermKey: ltk, keySize: 16, authenticated: true, secureConnections: true)
        t.h.host.host.setBonds([bond])
        t.h.disconnected(0x40)
        t.h.connect(0x41)
        t.h.clearLogs()
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x41, randomNumber: 0, encryptedDiversifier: 0)))
        #expect(t.h.sentCommands == [H4Packet(command: .leLongTermKeyRequestReply(handle: 0x41, longTermKey: ltk))])
        t.h.deliver(.encryptionChange(status: .success, handle: 0x41, enabled: 1))
        #expect(t.h.host.connections[0x41]?.security == .high, "an authenticated bond gives level 3")
        #expect(t.h.sentPayloads(handle: 0x41, channel: .smp) == [], "no pairing")
        #expect(!t.h.events.contains { if case .pairing = $0 { true } else { false } })
        // Encryption paused and refreshed (Key Refresh Complete) keeps the level.
        t.h.deliver(.encryptionKeyRefreshComplete(status: .success, handle: 0x41))
        #expect(t.h.host.connections[0x41]?.security == .high)
    }

    @Test func aBondedCentralWithAResolvablePrivateAddressIsAnsweredFromItsBond() throws {
        var t = Self.connected()
        let irk = Self.centralIRK
        let prand: [UInt8] = [0x11, 0x22, 0x5A]  // little-endian; the top two bits 0b01 (Vol 6 Part B §1.3.2.2)
        let rpa = try #require(BluetoothAddress(littleEndian: SMPCrypto.ah(irk: irk, prand: prand) + prand))
        #expect(Bond.isResolvablePrivateAddress(rpa))
        let ltk = [UInt8](repeating: 0x3C, count: 16)
        t.h.host.host.setBonds([
            Bond(address: Self.identity, addressType: .public, longTermKey: ltk, keySize: 16, authenticated: false, secureConnections: true, peerIRK: irk)
        ])
        t.h.connect(0x42, peer: rpa)
        t.h.clearLogs()
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x42, randomNumber: 0, encryptedDiversifier: 0)))
        #expect(t.h.sentCommands == [H4Packet(command: .leLongTermKeyRequestReply(handle: 0x42, longTermKey: ltk))])
    }

    @Test func unknownKeysGetANegativeReply() {
        var t = Self.connected()
        let legacy = Bond(
            address: BluetoothAddress("AA:BB:CC:DD:EE:FF")!, addressType: .public, longTermKey: [UInt8](repeating: 7, count: 16), ediv: 0x1234,
            rand: 0x55, keySize: 16, authenticated: false, secureConnections: false)
        t.h.host.host.setBonds([legacy])
        // EDIV 0/Rand 0 from a central with no SC bond; a legacy EDIV/Rand nobody has.
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0, encryptedDiversifier: 0)))
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0x55, encryptedDiversifier: 0x4321)))
        #expect(t.h.sentCommands == Array(repeating: H4Packet(command: .leLongTermKeyRequestNegativeReply(handle: 0x40)), count: 2))
        // The legacy bond's own EDIV/Rand is answered.
        t.h.clearLogs()
        t.h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0x55, encryptedDiversifier: 0x1234)))
        #expect(t.h.sentCommands == [H4Packet(command: .leLongTermKeyRequestReply(handle: 0x40, longTermKey: legacy.longTermKey!))])
    }

    @Test func smpTimerExpiresThroughTheHostTick() {
        var t = Self.connected()
        _ = t.exchange(.pairingRequest(t.central.features))
        t.h.events = []
        t.h.advance(to: .seconds(29))
        #expect(t.h.events.isEmpty)
        t.h.advance(to: .seconds(30))
        #expect(t.h.events == [.pairing(0x40, .timedOut)])
        #expect(t.h.host.nextDeadline == nil)
    }

    @Test func failedDHKeyCheckMakesTheSameCentralWaitOnItsNextLink() throws {
        var t = Self.connected()
        _ = t.exchange(.pairingRequest(t.central.features))
        _ = t.exchange(.pairingPublicKey(t.central.keyPair.publicKey.air))
        _ = t.exchange(.pairingRandom(t.central.nonce()))
        #expect(t.exchange(.pairingDHKeyCheck([UInt8](repeating: 0, count: 16))) == [.pairingFailed(.dhKeyCheckFailed)])
        t.h.disconnected(0x40)
        t.h.connect(0x41)
        t.h.completed([(0x41, UInt16(t.h.sentACL.filter { $0.handle == 0x41 }.count))])
        #expect(t.exchange(.pairingRequest(t.central.features), handle: 0x41) == [.pairingFailed(.repeatedAttempts)])
        t.h.now = .seconds(3)
        guard case .pairingResponse? = t.exchange(.pairingRequest(t.central.features), handle: 0x41).first else {
            Issue.record("no Pairing Response after the wait")
            return
        }
    }

    @Test func withoutSecurityConfiguredPairingIsNotSupported() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.completed([(0x40, UInt16(h.sentACL.count))])
        h.clearLogs()
        h.receive(ScriptedCentral().features.request, channel: .smp, handle: 0x40)
        #expect(h.sentPayloads(handle: 0x40, channel: .smp) == [[0x05, 0x05]])
    }
}

extension SMPPairingFeatures {
    var request: [UInt8] { SMPCommand.pairingRequest(self).encoded() }
}

/// A `HostHarness` with a scripted central on the SMP channel.
struct SecureHarness {
    var h: HostHarness
    var central: ScriptedCentral
    /// ACL packets the host sent that the controller already reported completed.
    private var acknowledged: [UInt16: Int] = [:]

    init(h: HostHarness, central: ScriptedCentral) {
        self.h = h
        self.central = central
        for p in h.sentACL { acknowledged[p.handle, default: 0] += 1 }
    }

    static func response(_ c: SMPCommand) -> SMPPairingFeatures? {
        if case .pairingResponse(let f) = c { f } else { nil }
    }

    /// The central sends `command`; returns the SMP commands the host answers with (and
    /// reports the ACL packets completed, so buffers never run out).
    mutating func exchange(_ command: SMPCommand, handle: UInt16 = 0x40) -> [SMPCommand] {
        let before = h.sentPayloads(handle: handle, channel: .smp).count
        h.receive(command.encoded(), channel: .smp, handle: handle)
        let sent = h.sentACL.filter { $0.handle == handle }.count
        if sent > acknowledged[handle, default: 0] {
            let n = sent - acknowledged[handle, default: 0]
            acknowledged[handle] = sent
            h.completed([(handle, UInt16(n))])
        }
        return h.sentPayloads(handle: handle, channel: .smp).dropFirst(before).compactMap { try? SMPCommand(decoding: $0) }
    }

    /// Ea, Eb and the LTK for Just Works (r = 0) between the central and the host's public address.
    func dhKeyChecks(pkb: SMPPublicKey, na: [UInt8], nb: [UInt8], rsp: SMPPairingFeatures) -> (ea: [UInt8], eb: [UInt8], ltk: [UInt8]) {
        let a = central.address.f5Bytes
        let b = SMPDeviceAddress(h.host.advertisedAddress, type: .public).f5Bytes
        let r = [UInt8](repeating: 0, count: 16)
        let dh = central.keyPair.dhKey(with: pkb) ?? []
        let (mac, ltk) = SMPCrypto.f5(w: dh, n1: na, n2: nb, a1: a, a2: b)
        let ea = SMPCrypto.f6(w: mac, n1: na, n2: nb, r: r, ioCap: Array(central.features.encoded.prefix(3)), a1: a, a2: b)
        let eb = SMPCrypto.f6(w: mac, n1: nb, n2: na, r: r, ioCap: Array(rsp.encoded.prefix(3)), a1: b, a2: a)
        return (ea, eb, ltk)
    }
}
