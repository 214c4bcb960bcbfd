import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// LE legacy pairing PDU by PDU (Core Spec Vol 3 Part H §2.3.5.5, §2.4.2, §3.6).
@Suite struct SMPLegacyPairingTests {
    static let legacyCentral = ScriptedCentral(
        io: .noInputNoOutput, auth: [.bonding], initiatorKeys: [.encryptionKey, .identityKey, .signingKey],
        responderKeys: [.encryptionKey, .identityKey, .signingKey])

    @Test func justWorksWithSTKThenDistributedLTK() throws {
        var t = SMPHarness(.init(identity: SMPHarness.localIdentity), central: Self.legacyCentral)
        let rsp = try t.featureExchange()
        #expect(rsp.authenticationRequirements == [.bonding, .secureConnections])
        #expect(rsp.initiatorKeyDistribution == [.identityKey, .signingKey], "the central's LTK is of no use to a peripheral")
        #expect(rsp.responderKeyDistribution == [.encryptionKey, .identityKey])
        let stk = try t.legacyExchange(tk: [UInt8](repeating: 0, count: 16), rsp: rsp)
        // STK answers the LTK request with EDIV = 0, Rand = 0.
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == stk)
        // Phase 3: LTK, EDIV/Rand, IRK, identity address; then the central's keys.
        let (ours, final) = t.keyDistribution(centralIRK: Array(repeating: 5, count: 16), centralCSRK: Array(repeating: 6, count: 16))
        guard ours.count == 4, case .encryptionInformation(let ltk) = ours[0], case .centralIdentification(let ediv, let rand) = ours[1] else {
            Issue.record("keys: \(ours)")
            return
        }
        #expect(ltk != stk && rand != 0)
        #expect(Array(ours[2...]) == [
            .identityInformation(irk: SMPHarness.localIdentity.irk),
            .identityAddressInformation(type: .random, address: SMPHarness.localIdentity.address),
        ])
        let bond = try #require(final.bond)
        #expect(bond.longTermKey == ltk && bond.ediv == ediv && bond.rand == rand)
        #expect(!bond.secureConnections && !bond.authenticated && bond.keySize == 16)
        #expect(bond.peerIRK == Array(repeating: 5, count: 16) && bond.peerCSRK == Array(repeating: 6, count: 16))
        #expect([bond].longTermKey(ediv: ediv, rand: rand, address: .zero) == ltk)
    }

    @Test func passkeyDisplayUsesThePasskeyAsTK() throws {
        let c = ScriptedCentral(io: .keyboardOnly, auth: [.mitm], initiatorKeys: [], responderKeys: [.encryptionKey])
        var t = SMPHarness(.init(ioCapability: .displayOnly), central: c)
        let out = t.send(.pairingRequest(c.features))
        guard case .pairingResponse(let rsp)? = out.sent.first, case .displayPasskey(let passkey)? = out.events.first else {
            Issue.record("\(out)")
            return
        }
        #expect(rsp.responderKeyDistribution == [], "no bonding, no keys")
        let stk = try t.legacyExchange(tk: ScriptedCentral.passkeyValue(passkey), rsp: rsp)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == stk)
        let done = t.responder.encryptionChanged(enabled: true, now: t.now)
        let bond = try #require(done.bond)
        #expect(done.events == [.pairingComplete(bond, bonded: false)])
        #expect(bond.authenticated && bond.longTermKey == nil)
    }

    @Test func passkeyInputWithMconfirmBeforeTheUser() throws {
        let c = ScriptedCentral(io: .displayOnly, auth: [.mitm], initiatorKeys: [], responderKeys: [])
        var t = SMPHarness(.init(ioCapability: .keyboardDisplay), central: c)
        let out = t.send(.pairingRequest(c.features))
        guard case .pairingResponse(let rsp)? = out.sent.first else { Issue.record("\(out)"); return }
        #expect(out.events == [.passkeyRequest])
        let tk = ScriptedCentral.passkeyValue(1234)
        let mrand = t.central.nonce()
        let pres = SMPCommand.pairingResponse(rsp).encoded()
        func c1(_ r: [UInt8]) -> [UInt8] {
            SMPCrypto.c1(k: tk, r: r, preq: t.preq, pres: pres, iat: 0, ia: c.address.address, rat: 1, ra: SMPHarness.localAddress.address)
        }
        #expect(t.send(.pairingConfirm(c1(mrand))) == [])
        guard case .pairingConfirm(let sconfirm)? = t.answer(.passkey(1234)).sent.first,
            case .pairingRandom(let srand)? = t.send(.pairingRandom(mrand)).sent.first
        else { Issue.record("no Sconfirm/Srand"); return }
        #expect(c1(srand) == sconfirm)
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == SMPCrypto.s1(k: tk, r1: srand, r2: mrand))
    }

    @Test func wrongMconfirmIsConfirmValueFailed() throws {
        var t = SMPHarness(.init(), central: Self.legacyCentral)
        _ = try t.featureExchange()
        #expect(t.send(.pairingConfirm(Array(repeating: 1, count: 16))).sent.count == 1)
        #expect(t.send(.pairingRandom(Array(repeating: 2, count: 16))) == failed(.confirmValueFailed))
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil)
        #expect(t.responder.nextDeadline == nil)
    }

    @Test func shortKeysAreMasked() throws {
        var c = Self.legacyCentral
        c.features.maximumEncryptionKeySize = 7
        var t = SMPHarness(.init(minimumKeySize: 7), central: c)
        let rsp = try t.featureExchange()
        let stk = try t.legacyExchange(tk: [UInt8](repeating: 0, count: 16), rsp: rsp)
        let key = try #require(t.responder.longTermKeyRequest(ediv: 0, rand: 0))
        #expect(key == Array(stk.prefix(7)) + [UInt8](repeating: 0, count: 9))
        #expect(t.responder.negotiatedKeySize == 7)
        guard case .encryptionInformation(let ltk)? = t.responder.encryptionChanged(enabled: true, now: t.now).sent.first else {
            Issue.record("no LTK")
            return
        }
        #expect(ltk[7...].allSatisfy { $0 == 0 } && ltk.prefix(7).contains { $0 != 0 })
    }

    @Test func secureConnectionsOnlyRefusesLegacy() {
        var t = SMPHarness(.init(secureConnectionsOnly: true), central: Self.legacyCentral)
        #expect(t.send(.pairingRequest(Self.legacyCentral.features)) == failed(.authenticationRequirements))
    }
}
