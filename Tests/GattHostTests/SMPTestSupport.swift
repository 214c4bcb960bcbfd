import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// A value as the Core Specification prints it (most significant octet first)
/// turned into the little-endian air order the SMP toolbox takes.
func spec(_ s: String) -> [UInt8] { h(s).reversed() }

/// The Core Specification's sample P-256 keys (Vol 3 Part H Appendix D.1 / §2.3.5.6.1).
enum SpecKeys {
    static let privateA = h("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    static let publicAx = spec("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let publicAy = spec("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")
    static let privateB = h("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let publicBx = spec("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
    static let publicBy = spec("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
    static let dhKey = spec("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
}

/// The central's side of a pairing, computed with the same toolbox, so that a
/// test drives a `PairingResponder` PDU by PDU and checks every value it sends.
struct ScriptedCentral {
    var address = SMPDeviceAddress(BluetoothAddress("00:11:22:33:44:55")!, type: .public)
    var keyPair = SMPKeyPair(privateKeyMSBFirst: SpecKeys.privateB)!
    var features: SMPPairingFeatures
    var rng = SplitMix64(seed: 0xC0FFEE)

    init(
        io: SMPIOCapability = .noInputNoOutput, auth: SMPAuthenticationRequirements = [.bonding, .secureConnections],
        maxKeySize: UInt8 = 16, initiatorKeys: SMPKeyDistribution = [.identityKey, .signingKey],
        responderKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    ) {
        features = SMPPairingFeatures(
            ioCapability: io, authenticationRequirements: auth, maximumEncryptionKeySize: maxKeySize,
            initiatorKeyDistribution: initiatorKeys, responderKeyDistribution: responderKeys)
    }

    mutating func nonce() -> [UInt8] { (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) } }

    static func passkeyValue(_ p: UInt32) -> [UInt8] {
        [UInt8(p & 0xFF), UInt8((p >> 8) & 0xFF), UInt8((p >> 16) & 0xFF)] + [UInt8](repeating: 0, count: 13)
    }
}

/// A responder under test and the clock.
struct SMPHarness {
    static let localAddress = SMPDeviceAddress(BluetoothAddress("D0:AA:BB:CC:DD:EE")!, type: .random)
    static let localIdentity = SMPIdentity(
        irk: spec("00112233 44556677 8899aabb ccddeeff"), address: BluetoothAddress("D0:AA:BB:CC:DD:EE")!, addressType: .random)
    static let responderKey = SMPKeyPair(privateKeyMSBFirst: h("0102030405060708 1112131415161718 2122232425262728 3132333435363738"))!

    var responder: PairingResponder
    var central: ScriptedCentral
    var now: Duration = .zero

    init(_ configuration: SecurityManagerConfiguration = .init(identity: SMPHarness.localIdentity), central: ScriptedCentral = ScriptedCentral(), seed: UInt64 = 7) {
        self.central = central
        responder = PairingResponder(
            configuration: configuration, local: Self.localAddress, peer: central.address, keyPair: Self.responderKey,
            random: SplitMix64(seed: seed))
    }

    /// Feeds a command to the responder.
    mutating func send(_ command: SMPCommand, attempts: RepeatedAttempts? = nil) -> [SecurityManagerOutput] {
        responder.receive(command.encoded(), now: now, attempts: attempts)
    }

    mutating func answer(_ a: PairingUserAnswer) -> [SecurityManagerOutput] { responder.respond(a, now: now) }
}

extension [SecurityManagerOutput] {
    /// The commands sent, in order.
    var sent: [SMPCommand] { compactMap { if case .send(let c) = $0 { c } else { nil } } }
    /// The events reported, in order.
    var events: [SecurityManagerEvent] { compactMap { if case .event(let e) = $0 { e } else { nil } } }
    /// The completed bond, if any.
    var bond: Bond? {
        for case .event(.pairingComplete(let b, _)) in self { return b }
        return nil
    }
}

/// Outputs of a pairing that failed locally with `reason`.
func failed(_ reason: SMPPairingFailedReason) -> [SecurityManagerOutput] {
    [.send(.pairingFailed(reason)), .event(.pairingFailed(reason, remote: false))]
}

/// Step helpers: each sends the central's PDU(s), checks what the responder
/// answers with `#expect`, and returns what the central learns.
extension SMPHarness {
    var preq: [UInt8] { SMPCommand.pairingRequest(central.features).encoded() }
    var a: [UInt8] { central.address.f5Bytes }
    var b: [UInt8] { Self.localAddress.f5Bytes }

    /// Phase 1; returns the Pairing Response (throws if the responder sent something else).
    mutating func featureExchange() throws -> SMPPairingFeatures {
        let out = send(.pairingRequest(central.features))
        guard case .pairingResponse(let rsp)? = out.sent.first else { throw SMPTestFailure("no Pairing Response: \(out)") }
        return rsp
    }

    /// The public key exchange, which must succeed; returns the responder's key.
    mutating func publicKey() throws -> SMPPublicKey {
        let (key, rest) = publicKeyExchange()
        guard let key else { throw SMPTestFailure("no public key: \(rest)") }
        return key
    }

    /// Secure Connections public key exchange; returns the responder's key and the outputs after it.
    mutating func publicKeyExchange() -> (SMPPublicKey?, [SecurityManagerOutput]) {
        let out = send(.pairingPublicKey(central.keyPair.publicKey.air))
        guard case .pairingPublicKey(let bytes)? = out.sent.first else { return (nil, out) }
        return (SMPPublicKey(air: bytes), Array(out.dropFirst()))
    }

    /// One Passkey Entry round i (§2.3.5.6.3) from the central; true if Cbi checked out.
    mutating func passkeyRound(_ i: Int, passkey: UInt32, pkb: SMPPublicKey) -> (ok: Bool, nai: [UInt8], nbi: [UInt8]) {
        let pka = central.keyPair.publicKey
        let nai = central.nonce()
        let rai = 0x80 | UInt8((passkey >> UInt32(i)) & 1)
        let cOut = send(.pairingConfirm(SMPCrypto.f4(u: pka.x, v: pkb.x, x: nai, z: rai)))
        guard case .pairingConfirm(let cbi)? = cOut.sent.first, cOut.count == 1 else { return (false, nai, []) }
        let rOut = send(.pairingRandom(nai))
        guard case .pairingRandom(let nbi)? = rOut.sent.first, rOut.count == 1 else { return (false, nai, []) }
        return (SMPCrypto.f4(u: pkb.x, v: pka.x, x: nbi, z: rai) == cbi, nai, nbi)
    }

    /// Passkey Entry `rounds`, then the DHKey checks with r = passkey; every Cbi and Eb is checked.
    mutating func finishPasskeyEntry(rounds: Range<Int>, passkey: UInt32, pkb: SMPPublicKey, rsp: SMPPairingFeatures) -> (ea: [UInt8], eb: [UInt8], ltk: [UInt8]) {
        var last: (ok: Bool, nai: [UInt8], nbi: [UInt8]) = (false, [], [])
        for i in rounds {
            last = passkeyRound(i, passkey: passkey, pkb: pkb)
            #expect(last.ok, "round \(i)")
        }
        let checks = dhKeyChecks(pkb: pkb, na: last.nai, nb: last.nbi, r: ScriptedCentral.passkeyValue(passkey), rsp: rsp)
        #expect(send(.pairingDHKeyCheck(checks.ea)) == [.send(.pairingDHKeyCheck(checks.eb))])
        return checks
    }

    /// The central's Ea and the Eb and LTK it expects back (§2.3.5.6.5).
    func dhKeyChecks(pkb: SMPPublicKey, na: [UInt8], nb: [UInt8], r: [UInt8], rsp: SMPPairingFeatures) -> (ea: [UInt8], eb: [UInt8], ltk: [UInt8]) {
        let dh = central.keyPair.dhKey(with: pkb) ?? []
        let (mac, ltk) = SMPCrypto.f5(w: dh, n1: na, n2: nb, a1: a, a2: b)
        let ea = SMPCrypto.f6(w: mac, n1: na, n2: nb, r: r, ioCap: Array(central.features.encoded.prefix(3)), a1: a, a2: b)
        let eb = SMPCrypto.f6(w: mac, n1: nb, n2: na, r: r, ioCap: Array(rsp.encoded.prefix(3)), a1: b, a2: a)
        return (ea, eb, ltk)
    }

    /// Legacy confirm/random exchange with `tk`; returns the STK the central derives (throws on a mismatch).
    mutating func legacyExchange(tk: [UInt8], rsp: SMPPairingFeatures) throws -> [UInt8] {
        let mrand = central.nonce()
        let pres = SMPCommand.pairingResponse(rsp).encoded()
        func c1(_ r: [UInt8]) -> [UInt8] {
            SMPCrypto.c1(k: tk, r: r, preq: preq, pres: pres, iat: central.address.typeBit, ia: central.address.address, rat: 1, ra: Self.localAddress.address)
        }
        guard case .pairingConfirm(let sconfirm)? = send(.pairingConfirm(c1(mrand))).sent.first,
            case .pairingRandom(let srand)? = send(.pairingRandom(mrand)).sent.first,
            c1(srand) == sconfirm
        else { throw SMPTestFailure("legacy confirm/random exchange failed") }
        return SMPCrypto.s1(k: tk, r1: srand, r2: mrand)
    }

    /// Phase 3 after the central encrypted: returns the responder's keys and the final outputs
    /// after the central sent IRK, identity address and CSRK.
    mutating func keyDistribution(centralIRK: [UInt8], centralCSRK: [UInt8]) -> (ours: [SMPCommand], final: [SecurityManagerOutput]) {
        let ours = responder.encryptionChanged(enabled: true, now: now).sent
        _ = send(.identityInformation(irk: centralIRK))
        _ = send(.identityAddressInformation(type: .public, address: BluetoothAddress("00:1B:DC:01:02:03")!))
        return (ours, send(.signingInformation(csrk: centralCSRK)))
    }
}

/// A scripted step that did not get the answer it needed.
struct SMPTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
