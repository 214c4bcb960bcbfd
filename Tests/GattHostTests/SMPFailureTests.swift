import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Every way a pairing fails (Core Spec Vol 3 Part H §3.5.5 reasons, §3.4
/// timeout, §2.3.6 repeated attempts) and what is sent for it.
@Suite struct SMPFailureTests {
    static let sc = ScriptedCentral()

    static func request(_ edit: (inout SMPPairingFeatures) -> Void) -> SMPCommand {
        var f = sc.features
        edit(&f)
        return .pairingRequest(f)
    }

    @Test func keySizeNegotiation() {
        var t = SMPHarness(.init(minimumKeySize: 16))
        #expect(t.send(Self.request { $0.maximumEncryptionKeySize = 15 }) == failed(.encryptionKeySize))
        t = SMPHarness(.init(minimumKeySize: 7))
        #expect(t.send(Self.request { $0.maximumEncryptionKeySize = 6 }) == failed(.invalidParameters))
        #expect(t.send(Self.request { $0.maximumEncryptionKeySize = 17 }) == failed(.invalidParameters))
        #expect(t.send(Self.request { $0.maximumEncryptionKeySize = 7 }).sent.first?.code == .pairingResponse)
        #expect(t.responder.negotiatedKeySize == 7)
        #expect(SecurityManagerConfiguration(minimumKeySize: 3).minimumKeySize == 7)
        #expect(SecurityManagerConfiguration(minimumKeySize: 30).minimumKeySize == 16)
    }

    @Test func phaseOneRefusals() {
        var t = SMPHarness(.init(requireMITM: true))
        #expect(t.send(Self.request { _ in }) == failed(.authenticationRequirements), "MITM required, Just Works only")
        t = SMPHarness()
        #expect(t.send(Self.request { $0.oobDataPresent = true }) == failed(.oobNotAvailable))
        #expect(t.responder.receive(h("01 07 00 09 10 00 00"), now: t.now) == [.send(.pairingFailed(.invalidParameters))], "reserved IO capability")
        #expect(t.responder.isPairing == false)
    }

    @Test func invalidPublicKeyIsDHKeyCheckFailed() throws {
        var t = SMPHarness()
        _ = try t.featureExchange()
        var bad = t.central.keyPair.publicKey.air
        bad[63] ^= 0x40
        #expect(t.send(.pairingPublicKey(bad)) == failed(.dhKeyCheckFailed))
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil)
    }

    @Test(arguments: [false, true]) func debugKeyOnlyWhenAllowed(allowed: Bool) throws {
        var c = ScriptedCentral()
        c.keyPair = .debug
        var t = SMPHarness(.init(allowDebugKeys: allowed), central: c)
        _ = try t.featureExchange()
        let (pkb, rest) = t.publicKeyExchange()
        if allowed {
            #expect(pkb != nil && rest.sent.first?.code == .pairingConfirm)
        } else {
            #expect(pkb == nil && rest == failed(.authenticationRequirements))
            #expect(t.responder.isPairing == false)
        }
    }

    @Test func reflectedPublicKeyIsRefused() throws {
        var c = ScriptedCentral()
        c.keyPair = SMPHarness.responderKey
        var t = SMPHarness(central: c)
        _ = try t.featureExchange()
        #expect(t.send(.pairingPublicKey(SMPHarness.responderKey.publicKey.air)) == failed(.authenticationRequirements))
    }

    @Test func badDHKeyCheck() throws {
        var t = SMPHarness()
        _ = try t.featureExchange()
        _ = try t.publicKey()
        #expect(t.send(.pairingRandom(t.central.nonce())).sent.count == 1)
        #expect(t.send(.pairingDHKeyCheck(Array(repeating: 0, count: 16))) == failed(.dhKeyCheckFailed))
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil)
    }

    @Test func unexpectedAndUnsupportedCommands() throws {
        var t = SMPHarness()
        // Idle: a stray command gets Unspecified Reason, but there is no pairing to report.
        #expect(t.send(.pairingRandom(Array(repeating: 0, count: 16))) == [.send(.pairingFailed(.unspecifiedReason))])
        // Reserved code, commands only a responder sends.
        #expect(t.responder.receive([0x1F, 0x00], now: t.now) == [.send(.pairingFailed(.commandNotSupported))])
        #expect(t.send(.securityRequest([.bonding])) == [.send(.pairingFailed(.commandNotSupported))])
        // During a pairing: the pairing ends.
        _ = try t.featureExchange()
        #expect(t.send(.pairingConfirm(Array(repeating: 0, count: 16))) == failed(.unspecifiedReason), "public key expected")
        _ = try t.featureExchange()
        #expect(t.send(.pairingResponse(Self.sc.features)) == failed(.commandNotSupported))
        _ = try t.featureExchange()
        #expect(t.send(.pairingRequest(Self.sc.features)) == failed(.unspecifiedReason), "no second request mid-pairing")
        _ = try t.featureExchange()
        #expect(t.responder.receive([0x03, 0x00], now: t.now) == failed(.invalidParameters), "bad length")
        #expect(t.responder.receive([], now: t.now) == [])
    }

    @Test func keypressNotificationsAndPeerFailures() throws {
        var t = SMPHarness()
        #expect(t.send(.keypressNotification(1)) == [])
        #expect(t.send(.pairingFailed(.unspecifiedReason)) == [], "nothing to fail")
        _ = try t.featureExchange()
        #expect(t.send(.keypressNotification(0)) == [])
        #expect(t.responder.isPairing)
        #expect(t.send(.pairingFailed(.passkeyEntryFailed)) == [.event(.pairingFailed(.passkeyEntryFailed, remote: true))])
        #expect(!t.responder.isPairing && t.responder.nextDeadline == nil)
        // A malformed Pairing Failed is never answered with another one.
        #expect(t.responder.receive([0x05], now: t.now) == [])
        _ = try t.featureExchange()
        #expect(t.responder.receive([0x05, 0x01, 0x02], now: t.now) == [.event(.pairingFailed(.unspecifiedReason, remote: true))])
        #expect(!t.responder.isPairing)
    }

    @Test func userAcceptanceWhenConfigured() throws {
        var t = SMPHarness(.init(confirmPairing: true))
        #expect(t.send(.pairingRequest(Self.sc.features)) == [.event(.pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput))])
        #expect(t.answer(.confirm(true)) == [], "not the question asked")
        #expect(t.answer(.accept).sent.first?.code == .pairingResponse)
        t = SMPHarness(.init(confirmPairing: true))
        _ = t.send(.pairingRequest(Self.sc.features))
        #expect(t.answer(.reject) == failed(.pairingNotSupported))
        #expect(t.answer(.accept) == [], "nothing pending any more")
    }

    @Test func encryptionFailureEndsThePairing() throws {
        var t = SMPHarness(central: SMPLegacyPairingTests.legacyCentral)
        let rsp = try t.featureExchange()
        _ = try t.legacyExchange(tk: [UInt8](repeating: 0, count: 16), rsp: rsp)
        #expect(t.responder.encryptionChanged(enabled: false, now: t.now) == failed(.unspecifiedReason))
        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil)
        #expect(t.responder.encryptionChanged(enabled: true, now: t.now) == [], "no pairing: a bonded re-encryption")
    }

    @Test func keysOutOfOrderInPhaseThree() throws {
        var t = SMPHarness()
        let rsp = try t.featureExchange()
        let pkb = try t.publicKey()
        let na = t.central.nonce()
        guard case .pairingRandom(let nb)? = t.send(.pairingRandom(na)).sent.first else { Issue.record("no Nb"); return }
        _ = t.send(.pairingDHKeyCheck(t.dhKeyChecks(pkb: pkb, na: na, nb: nb, r: Array(repeating: 0, count: 16), rsp: rsp).ea))
        _ = t.responder.encryptionChanged(enabled: true, now: t.now)
        #expect(t.send(.signingInformation(csrk: Array(repeating: 1, count: 16))) == failed(.unspecifiedReason), "IRK comes first")
    }

    @Test func timeoutClosesSMPOnTheLink() throws {
        var t = SMPHarness()
        _ = try t.featureExchange()
        #expect(t.responder.tick(now: .seconds(29)) == [])
        t.now = .seconds(20)
        _ = try t.publicKey()
        #expect(t.responder.nextDeadline == .seconds(50))
        #expect(t.responder.tick(now: .seconds(49)) == [])
        #expect(t.responder.tick(now: .seconds(50)) == [.event(.timedOut)], "no Pairing Failed after a timeout")
        #expect(t.responder.hasTimedOut && t.responder.nextDeadline == nil)
        t.now = .seconds(60)
        #expect(t.send(.pairingRequest(Self.sc.features)) == [], "a new pairing needs a new link")
        #expect(t.responder.receive([0x42], now: t.now) == [])
        #expect(t.answer(.accept) == [] && t.responder.tick(now: .seconds(200)) == [])
    }

    @Test func idleLinksNeverTimeOut() {
        var t = SMPHarness()
        #expect(t.responder.nextDeadline == nil)
        #expect(t.responder.tick(now: .seconds(1000)) == [])
    }

    @Test func repeatedAttemptsBackOffExponentially() throws {
        var attempts = RepeatedAttempts(initialInterval: .seconds(2), maximumInterval: .seconds(5))
        var t = SMPHarness(central: SMPLegacyPairingTests.legacyCentral)
        let peer = t.central.address.address
        func failOnce(_ t: inout SMPHarness, _ attempts: inout RepeatedAttempts) {
            #expect(t.send(.pairingRequest(t.central.features), attempts: attempts).sent.first?.code == .pairingResponse)
            _ = t.send(.pairingConfirm(Array(repeating: 1, count: 16)))
            let out = t.send(.pairingRandom(Array(repeating: 2, count: 16)))
            #expect(out == failed(.confirmValueFailed))
            attempts.observe(out, peer: peer, now: t.now)
        }
        failOnce(&t, &attempts)
        #expect(t.send(.pairingRequest(t.central.features), attempts: attempts) == [
            .send(.pairingFailed(.repeatedAttempts)), .event(.pairingFailed(.repeatedAttempts, remote: false)),
        ])
        #expect(!attempts.isBlocked(BluetoothAddress("11:22:33:44:55:66")!, now: t.now), "other peers unaffected")
        t.now = .seconds(2)
        failOnce(&t, &attempts)
        t.now = .seconds(5)
        #expect(attempts.isBlocked(peer, now: t.now), "second wait is 4 s")
        t.now = .seconds(6)
        failOnce(&t, &attempts)
        #expect(attempts.isBlocked(peer, now: .seconds(10)) && !attempts.isBlocked(peer, now: .seconds(11)), "capped at 5 s")
        // Failures sent by the peer and successes.
        attempts.observe([.event(.pairingFailed(.confirmValueFailed, remote: true))], peer: peer, now: .seconds(11))
        #expect(!attempts.isBlocked(peer, now: .seconds(11)))
        attempts.observe([.event(.pairingFailed(.dhKeyCheckFailed, remote: false))], peer: peer, now: .seconds(11))
        #expect(attempts.isBlocked(peer, now: .seconds(11)))
        let bond = Bond(address: peer, addressType: .random, longTermKey: nil, keySize: 16, authenticated: false, secureConnections: true)
        attempts.observe([.event(.pairingComplete(bond, bonded: true))], peer: peer, now: .seconds(11))
        #expect(!attempts.isBlocked(peer, now: .seconds(11)))
    }
}

/// Security Request (Core Spec Vol 3 Part H §3.6.7) sent on the host's request.
@Suite struct SMPSecurityRequestTests {
    @Test func securityRequestOnlyWhenIdle() throws {
        var t = SMPHarness(.init(ioCapability: .displayYesNo))
        #expect(t.responder.requestSecurity() == [.send(.securityRequest([.bonding, .mitm, .secureConnections]))])
        #expect(t.responder.nextDeadline == nil && !t.responder.isPairing)
        t = SMPHarness(.init(bondable: false))
        #expect(t.responder.requestSecurity() == [.send(.securityRequest([.secureConnections]))])
        _ = try t.featureExchange()
        #expect(t.responder.requestSecurity() == [], "a pairing already runs")
    }
}
