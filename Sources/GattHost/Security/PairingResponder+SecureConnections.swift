import GattCore

/// Phase 2 of LE Secure Connections pairing (Core Spec Vol 3 Part H §2.3.5.6):
/// public key exchange, authentication stage 1 (Just Works / Numeric Comparison
/// or 20 rounds of Passkey Entry) and stage 2 (DHKey checks with f5/f6).
extension PairingResponder {
    /// A command during Secure Connections phase 2; `nil` if unexpected here.
    mutating func secureConnections(
        _ command: SMPCommand, session: PairingSession, step: SecureConnectionsStep, now: Duration
    ) -> [SecurityManagerOutput]? {
        switch (command, step) {
        case (.pairingPublicKey(let bytes), .awaitingPublicKey):
            return publicKeyExchange(bytes, session: session, now: now)
        case (.pairingRandom(let na), .awaitingNonce(let ex, let nb)):
            let out = send(.pairingRandom(nb), now: now)
            guard session.method == .numericComparison else {
                phase = .secureConnections(session, .awaitingDHKeyCheck(ex, na: na, nb: nb, r: [UInt8](repeating: 0, count: 16)))
                return out
            }
            let value = SMPCrypto.g2(u: ex.peerKey.x, v: ex.ourKey.x, x: na, y: nb) % 1_000_000
            phase = .secureConnections(session, .awaitingComparison(ex, na: na, nb: nb, peerCheck: nil))
            return out + [.event(.numericComparison(value))]
        case (.pairingDHKeyCheck(let ea), .awaitingComparison(let ex, let na, let nb, nil)):
            // The central's user confirmed first: keep Ea until ours answers.
            phase = .secureConnections(session, .awaitingComparison(ex, na: na, nb: nb, peerCheck: ea))
            return []
        case (.pairingConfirm(let ca), .awaitingPasskey(let ex, nil)):
            phase = .secureConnections(session, .awaitingPasskey(ex, peerConfirm: ca))
            return []
        case (.pairingConfirm(let cai), .passkeyConfirm(let ex, let passkey, let round)):
            return passkeyRoundConfirm(cai, ex: ex, passkey: passkey, round: round, session: session, now: now)
        case (.pairingRandom(let nai), .passkeyRandom(let ex, let passkey, let round, let cai, let nbi)):
            let rai = 0x80 | UInt8((passkey >> UInt32(round)) & 1)
            guard SMPCrypto.f4(u: ex.peerKey.x, v: ex.ourKey.x, x: nai, z: rai) == cai else { return fail(.confirmValueFailed, now: now) }
            let out = send(.pairingRandom(nbi), now: now)
            phase = .secureConnections(
                session,
                round < 19
                    ? .passkeyConfirm(ex, passkey: passkey, round: round + 1)
                    : .awaitingDHKeyCheck(ex, na: nai, nb: nbi, r: Self.passkeyValue(passkey)))
            return out
        case (.pairingDHKeyCheck(let ea), .awaitingDHKeyCheck(let ex, let na, let nb, let r)):
            return dhKeyCheck(ea, ex: ex, na: na, nb: nb, r: r, session: session, now: now)
        default:
            return nil
        }
    }

    /// Validates the central's public key, computes the DHKey and answers with
    /// ours (§2.3.5.6.1), then starts authentication stage 1.
    ///
    /// A key that is not on P-256 fails with DHKey Check Failed (0x0B), as Zephyr
    /// does when its DHKey generation rejects the point; the debug key (unless
    /// allowed) and a reflection of our own key fail with Authentication Requirements (0x03).
    private mutating func publicKeyExchange(_ bytes: [UInt8], session: PairingSession, now: Duration) -> [SecurityManagerOutput] {
        guard let peerKey = SMPPublicKey(air: bytes) else { return fail(.dhKeyCheckFailed, now: now) }
        guard configuration.allowDebugKeys || !peerKey.isDebugKey else { return fail(.authenticationRequirements, now: now) }
        guard peerKey != keyPair.publicKey else { return fail(.authenticationRequirements, now: now) }
        guard let dhKey = keyPair.dhKey(with: peerKey) else { return fail(.dhKeyCheckFailed, now: now) }
        let ex = KeyExchange(peerKey: peerKey, ourKey: keyPair.publicKey, dhKey: dhKey)
        var out = send(.pairingPublicKey(ex.ourKey.air), now: now)
        switch session.method {
        case .justWorks, .numericComparison:
            // Cb = f4(PKbx, PKax, Nb, 0) (§2.3.5.6.2).
            let nb = randomBytes(16)
            out += send(.pairingConfirm(SMPCrypto.f4(u: ex.ourKey.x, v: ex.peerKey.x, x: nb, z: 0)), now: now)
            phase = .secureConnections(session, .awaitingNonce(ex, ourNonce: nb))
        case .passkeyDisplay:
            let passkey = randomPasskey()
            phase = .secureConnections(session, .passkeyConfirm(ex, passkey: passkey, round: 0))
            out.append(.event(.displayPasskey(passkey)))
        case .passkeyInput:
            phase = .secureConnections(session, .awaitingPasskey(ex, peerConfirm: nil))
            out.append(.event(.passkeyRequest))
        }
        return out
    }

    /// Passkey Entry round i (§2.3.5.6.3): answers Cai with Cbi = f4(PKbx, PKax, Nbi, rbi).
    private mutating func passkeyRoundConfirm(
        _ cai: [UInt8], ex: KeyExchange, passkey: UInt32, round: Int, session: PairingSession, now: Duration
    ) -> [SecurityManagerOutput] {
        let nbi = randomBytes(16)
        let rbi = 0x80 | UInt8((passkey >> UInt32(round)) & 1)
        phase = .secureConnections(session, .passkeyRandom(ex, passkey: passkey, round: round, peerConfirm: cai, ourNonce: nbi))
        return send(.pairingConfirm(SMPCrypto.f4(u: ex.ourKey.x, v: ex.peerKey.x, x: nbi, z: rbi)), now: now)
    }

    /// Authentication stage 2 (§2.3.5.6.5): checks Ea, answers Eb, and keeps the LTK.
    private mutating func dhKeyCheck(
        _ ea: [UInt8], ex: KeyExchange, na: [UInt8], nb: [UInt8], r: [UInt8], session: PairingSession, now: Duration
    ) -> [SecurityManagerOutput] {
        let a = peer.f5Bytes, b = local.f5Bytes
        let (macKey, ltk) = SMPCrypto.f5(w: ex.dhKey, n1: na, n2: nb, a1: a, a2: b)
        let expected = SMPCrypto.f6(w: macKey, n1: na, n2: nb, r: r, ioCap: session.request.f6IOCap, a1: a, a2: b)
        guard ea == expected else { return fail(.dhKeyCheckFailed, now: now) }
        let eb = SMPCrypto.f6(w: macKey, n1: nb, n2: na, r: r, ioCap: session.response.f6IOCap, a1: b, a2: a)
        var s = session
        s.linkKey = s.shortened(ltk)
        phase = .awaitingEncryption(s, key: s.linkKey)
        return send(.pairingDHKeyCheck(eb), now: now)
    }

    /// The user typed the passkey (or refused) during Secure Connections Passkey Entry.
    mutating func scPasskeyEntered(
        _ answer: PairingUserAnswer, session: PairingSession, exchange ex: KeyExchange, peerConfirm: [UInt8]?, now: Duration
    ) -> [SecurityManagerOutput] {
        switch answer {
        case .passkey(let passkey) where passkey <= 999_999:
            guard let ca = peerConfirm else {
                phase = .secureConnections(session, .passkeyConfirm(ex, passkey: passkey, round: 0))
                return []
            }
            return passkeyRoundConfirm(ca, ex: ex, passkey: passkey, round: 0, session: session, now: now)
        case .passkey, .reject:
            return fail(.passkeyEntryFailed, now: now)
        case .accept, .confirm:
            return []
        }
    }

    /// The user compared the numbers (§2.3.5.6.2): on a match Eb may follow Ea.
    mutating func comparisonAnswered(
        _ answer: PairingUserAnswer, session: PairingSession, exchange ex: KeyExchange, na: [UInt8], nb: [UInt8],
        peerCheck: [UInt8]?, now: Duration
    ) -> [SecurityManagerOutput] {
        let zero = [UInt8](repeating: 0, count: 16)
        switch answer {
        case .confirm(true), .accept:
            guard let ea = peerCheck else {
                phase = .secureConnections(session, .awaitingDHKeyCheck(ex, na: na, nb: nb, r: zero))
                return []
            }
            return dhKeyCheck(ea, ex: ex, na: na, nb: nb, r: zero, session: session, now: now)
        case .confirm(false), .reject:
            return fail(.numericComparisonFailed, now: now)
        case .passkey:
            return []
        }
    }
}
