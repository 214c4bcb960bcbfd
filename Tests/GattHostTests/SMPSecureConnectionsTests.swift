import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// LE Secure Connections pairing PDU by PDU against a scripted central that
/// computes its side with the same toolbox (Core Spec Vol 3 Part H §2.3.5.6, §3.6).
@Suite struct SMPSecureConnectionsTests {
    static let centralIRK = spec("0f0e0d0c 0b0a0908 07060504 03020100")
    static let centralCSRK = spec("a0a1a2a3 a4a5a6a7 a8a9aaab acadaeaf")

    @Test func justWorksBondsWithTheSameLTKOnBothSides() throws {
        var t = SMPHarness(.init(identity: SMPHarness.localIdentity, distributeSigningKey: true))
        // Phase 1.
        let rsp = try t.featureExchange()
        #expect(rsp.ioCapability == .noInputNoOutput && !rsp.oobDataPresent && rsp.maximumEncryptionKeySize == 16)
        #expect(rsp.authenticationRequirements == [.bonding, .secureConnections])
        #expect(rsp.initiatorKeyDistribution == [.identityKey, .signingKey])
        #expect(rsp.responderKeyDistribution == [.identityKey, .signingKey], "no EncKey with Secure Connections")
        #expect(t.responder.nextDeadline == .seconds(30))
        // Public keys, then Cb right away.
        t.now = .seconds(1)
        let (pkbOpt, rest) = t.publicKeyExchange()
        let pkb = try #require(pkbOpt)
        #expect(pkb == SMPHarness.responderKey.publicKey)
        guard case .pairingConfirm(let cb)? = rest.sent.first, rest.count == 1 else { Issue.record("no Cb: \(rest)"); return }
        #expect(t.responder.nextDeadline == .seconds(31), "the SMP timer restarts on every command sent")
        // Na → Nb, and Cb = f4(PKbx, PKax, Nb, 0).
        let na = t.central.nonce()
        guard case .pairingRandom(let nb)? = t.send(.pairingRandom(na)).sent.first else { Issue.record("no Nb"); return }
        #expect(SMPCrypto.f4(u: pkb.x, v: t.central.keyPair.publicKey.x, x: nb, z: 0) == cb)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil, "no key before the DHKey checks")
        // Ea → Eb.
        let zero = [UInt8](repeating: 0, count: 16)
        let checks = t.dhKeyChecks(pkb: pkb, na: na, nb: nb, r: zero, rsp: rsp)
        #expect(t.send(.pairingDHKeyCheck(checks.ea)) == [.send(.pairingDHKeyCheck(checks.eb))])
        // The controller asks for the LTK: EDIV = Rand = 0 only.
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == checks.ltk)
        #expect(t.responder.longTermKeyRequest(ediv: 1, rand: 0) == nil)
        // Phase 3: our IRK, identity address and CSRK, then the central's.
        let (ours, final) = t.keyDistribution(centralIRK: Self.centralIRK, centralCSRK: Self.centralCSRK)
        #expect(ours.count == 3)
        #expect(ours.first == .identityInformation(irk: SMPHarness.localIdentity.irk))
        #expect(ours.dropFirst().first == .identityAddressInformation(type: .random, address: SMPHarness.localIdentity.address))
        guard case .signingInformation(let ourCSRK)? = ours.last else { Issue.record("no CSRK"); return }
        let bond = try #require(final.bond)
        #expect(final.events == [.pairingComplete(bond, bonded: true)])
        #expect(bond == Bond(
            address: BluetoothAddress("00:1B:DC:01:02:03")!, addressType: .public, longTermKey: checks.ltk, keySize: 16,
            authenticated: false, secureConnections: true, peerIRK: Self.centralIRK, peerCSRK: Self.centralCSRK,
            localIdentity: SMPHarness.localIdentity, localCSRK: ourCSRK))
        #expect(!t.responder.isPairing && t.responder.nextDeadline == nil)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil, "the bond store answers from now on")
    }

    @Test func numericComparisonShowsTheSameNumberAndWaitsForTheUser() throws {
        var c = ScriptedCentral(io: .displayYesNo, auth: [.bonding, .mitm, .secureConnections], initiatorKeys: [], responderKeys: [])
        c.rng = SplitMix64(seed: 99)
        var t = SMPHarness(.init(ioCapability: .displayYesNo), central: c)
        let rsp = try t.featureExchange()
        #expect(rsp.authenticationRequirements == [.bonding, .mitm, .secureConnections])
        let (pkbOpt, _) = t.publicKeyExchange()
        let pkb = try #require(pkbOpt)
        let na = t.central.nonce()
        let out = t.send(.pairingRandom(na))
        guard case .pairingRandom(let nb)? = out.sent.first else { Issue.record("no Nb"); return }
        let va = SMPCrypto.g2(u: t.central.keyPair.publicKey.x, v: pkb.x, x: na, y: nb) % 1_000_000
        #expect(out.events == [.numericComparison(va)])
        // Ea arrives before our user answers: Eb only after the confirmation.
        let checks = t.dhKeyChecks(pkb: pkb, na: na, nb: nb, r: [UInt8](repeating: 0, count: 16), rsp: rsp)
        #expect(t.send(.pairingDHKeyCheck(checks.ea)) == [])
        #expect(t.answer(.passkey(1)) == [], "an answer to a question not asked is ignored")
        #expect(t.answer(.confirm(true)) == [.send(.pairingDHKeyCheck(checks.eb))])
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == checks.ltk)
        let done = t.responder.encryptionChanged(enabled: true, now: t.now)
        #expect(done.sent == [], "nothing to distribute")
        let bond = try #require(done.bond)
        #expect(bond.authenticated && bond.secureConnections && bond.longTermKey == checks.ltk)
        #expect(bond.address == t.central.address.address && bond.addressType == .public, "no identity: the connection address")
    }

    @Test func numericComparisonConfirmedBeforeEa() throws {
        let c = ScriptedCentral(io: .keyboardDisplay, auth: [.mitm, .secureConnections], initiatorKeys: [], responderKeys: [])
        var t = SMPHarness(.init(ioCapability: .keyboardDisplay), central: c)
        let rsp = try t.featureExchange()
        #expect(!rsp.authenticationRequirements.contains(.bonding), "the central did not ask to bond")
        let pkb = try t.publicKey()
        let na = t.central.nonce()
        guard case .pairingRandom(let nb)? = t.send(.pairingRandom(na)).sent.first else { Issue.record("no Nb"); return }
        #expect(t.answer(.confirm(true)) == [])
        let checks = t.dhKeyChecks(pkb: pkb, na: na, nb: nb, r: [UInt8](repeating: 0, count: 16), rsp: rsp)
        #expect(t.send(.pairingDHKeyCheck(checks.ea)) == [.send(.pairingDHKeyCheck(checks.eb))])
        let done = t.responder.encryptionChanged(enabled: true, now: t.now)
        #expect(done.events == [.pairingComplete(try #require(done.bond), bonded: false)])
    }

    @Test func numericComparisonRejected() throws {
        let c = ScriptedCentral(io: .displayYesNo, auth: [.mitm, .secureConnections])
        var t = SMPHarness(.init(ioCapability: .displayYesNo), central: c)
        _ = try t.featureExchange()
        _ = try t.publicKey()
        #expect(t.send(.pairingRandom(t.central.nonce())).events.count == 1)
        #expect(t.answer(.confirm(false)) == failed(.numericComparisonFailed))
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil)
    }

    /// Passkey Entry, we display: 20 rounds, then the DHKey checks with r = passkey.
    @Test func passkeyDisplayTwentyRounds() throws {
        let c = ScriptedCentral(io: .keyboardOnly, auth: [.bonding, .mitm, .secureConnections], initiatorKeys: [.identityKey])
        var t = SMPHarness(.init(ioCapability: .displayOnly), central: c)
        let rsp = try t.featureExchange()
        let (pkbOpt, rest) = t.publicKeyExchange()
        let pkb = try #require(pkbOpt)
        guard case .displayPasskey(let passkey)? = rest.events.first, rest.count == 1 else { Issue.record("no passkey: \(rest)"); return }
        #expect(passkey <= 999_999)
        let checks = t.finishPasskeyEntry(rounds: 0..<20, passkey: passkey, pkb: pkb, rsp: rsp)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == checks.ltk)
        #expect(t.responder.encryptionChanged(enabled: true, now: t.now).sent == [], "no identity configured: nothing of ours")
        _ = t.send(.identityInformation(irk: Self.centralIRK))
        let bond = try #require(t.send(.identityAddressInformation(type: .random, address: BluetoothAddress("C9:00:00:00:00:01")!)).bond)
        #expect(bond.authenticated && bond.peerIRK == Self.centralIRK && bond.address == BluetoothAddress("C9:00:00:00:00:01")!)
        #expect(bond.addressType == .random && bond.peerCSRK == nil)
    }

    /// Passkey Entry, our user types: the central's Ca1 may arrive first.
    @Test func passkeyInputWithEarlyConfirm() throws {
        let c = ScriptedCentral(io: .displayOnly, auth: [.mitm, .secureConnections])
        var t = SMPHarness(.init(ioCapability: .keyboardOnly), central: c)
        let rsp = try t.featureExchange()
        let (pkbOpt, rest) = t.publicKeyExchange()
        let pkb = try #require(pkbOpt)
        #expect(rest == [.event(.passkeyRequest)])
        let passkey: UInt32 = 654_321
        let pka = t.central.keyPair.publicKey
        let na0 = t.central.nonce()
        let r0 = 0x80 | UInt8(passkey & 1)
        #expect(t.send(.pairingConfirm(SMPCrypto.f4(u: pka.x, v: pkb.x, x: na0, z: r0))) == [])
        let out = t.answer(.passkey(passkey))
        guard case .pairingConfirm(let cb0)? = out.sent.first, out.count == 1 else { Issue.record("no Cb1: \(out)"); return }
        guard case .pairingRandom(let nb0)? = t.send(.pairingRandom(na0)).sent.first else { Issue.record("no Nb1"); return }
        #expect(SMPCrypto.f4(u: pkb.x, v: pka.x, x: nb0, z: r0) == cb0)
        let checks = t.finishPasskeyEntry(rounds: 1..<20, passkey: passkey, pkb: pkb, rsp: rsp)
        #expect(t.responder.pairingSecurity?.authenticated == true && t.responder.longTermKeyRequest(ediv: 0, rand: 0) == checks.ltk)
    }

    @Test func wrongPasskeyFailsTheFirstRoundWhoseBitDiffers() throws {
        let c = ScriptedCentral(io: .displayOnly, auth: [.mitm, .secureConnections])
        var t = SMPHarness(.init(ioCapability: .keyboardOnly), central: c)
        _ = try t.featureExchange()
        let pkb = try t.publicKey()
        // Our user types 0b100 (4); the central uses 0b110 (6): round 1 differs.
        #expect(t.answer(.passkey(4)) == [])
        #expect(t.passkeyRound(0, passkey: 6, pkb: pkb).ok)
        let pka = t.central.keyPair.publicKey
        let na = t.central.nonce()
        #expect(t.send(.pairingConfirm(SMPCrypto.f4(u: pka.x, v: pkb.x, x: na, z: 0x81))).sent.count == 1)
        #expect(t.send(.pairingRandom(na)) == failed(.confirmValueFailed))
        #expect(!t.responder.isPairing)
    }

    @Test func passkeyRequestRejectedOrOutOfRange() throws {
        for answer: PairingUserAnswer in [.reject, .passkey(1_000_000)] {
            var t = SMPHarness(.init(ioCapability: .keyboardOnly), central: ScriptedCentral(io: .displayOnly, auth: [.mitm, .secureConnections]))
            _ = try t.featureExchange()
            _ = try t.publicKey()
            #expect(t.answer(answer) == failed(.passkeyEntryFailed))
        }
    }
}

/// Bonding flags, re-pairing and the security a finished pairing gives the link.
@Suite struct SMPBondingTests {
    /// Runs a Secure Connections Just Works pairing up to the LTK request.
    static func pairUpToEncryption(_ t: inout SMPHarness) throws -> [UInt8] {
        let rsp = try t.featureExchange()
        let pkb = try t.publicKey()
        let na = t.central.nonce()
        guard case .pairingRandom(let nb)? = t.send(.pairingRandom(na)).sent.first else { throw SMPTestFailure("no Nb") }
        let checks = t.dhKeyChecks(pkb: pkb, na: na, nb: nb, r: [UInt8](repeating: 0, count: 16), rsp: rsp)
        guard t.send(.pairingDHKeyCheck(checks.ea)) == [.send(.pairingDHKeyCheck(checks.eb))] else { throw SMPTestFailure("no Eb") }
        return checks.ltk
    }

    @Test func notBondableMeansNoKeysAndNoBond() throws {
        var t = SMPHarness(.init(bondable: false, identity: SMPHarness.localIdentity, distributeSigningKey: true))
        let rsp = try t.featureExchange()
        #expect(!rsp.authenticationRequirements.contains(.bonding))
        #expect(rsp.initiatorKeyDistribution == [] && rsp.responderKeyDistribution == [])
        t = SMPHarness(.init(bondable: false))
        let ltk = try Self.pairUpToEncryption(&t)
        #expect(t.responder.pairingSecurity == SMPLinkSecurity(keySize: 16, authenticated: false, secureConnections: true))
        let done = t.responder.encryptionChanged(enabled: true, now: t.now)
        let bond = try #require(done.bond)
        #expect(done == [.event(.pairingComplete(bond, bonded: false))])
        #expect(bond.longTermKey == ltk && bond.security.level == .medium)
    }

    @Test func aBondedLinkMayPairAgain() throws {
        var t = SMPHarness()
        _ = try Self.pairUpToEncryption(&t)
        _ = t.responder.encryptionChanged(enabled: true, now: t.now)
        #expect(t.responder.pairingSecurity != nil, "keys still to come")
        _ = t.send(.identityInformation(irk: Array(repeating: 1, count: 16)))
        _ = t.send(.identityAddressInformation(type: .public, address: BluetoothAddress("00:1B:DC:01:02:03")!))
        #expect(t.send(.signingInformation(csrk: Array(repeating: 2, count: 16))).bond != nil)
        #expect(t.responder.pairingSecurity == nil && !t.responder.isPairing)
        // Encryption refreshed with the bonded key: nothing for the Security Manager.
        #expect(t.responder.encryptionChanged(enabled: true, now: t.now) == [])
        t.central.rng = SplitMix64(seed: 1234)
        let second = try Self.pairUpToEncryption(&t)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == second)
    }
}
