import GattCore

/// Phase 2 of LE legacy pairing (Core Spec Vol 3 Part H §2.3.5.5): TK from Just
/// Works (0) or Passkey Entry, Sconfirm/Srand with c1, STK with s1.
extension PairingResponder {
    /// A command during legacy phase 2; `nil` if unexpected here.
    mutating func legacy(_ command: SMPCommand, session: PairingSession, step: LegacyPairingStep, now: Duration) -> [SecurityManagerOutput]? {
        switch (command, step) {
        case (.pairingConfirm(let mconfirm), .awaitingPasskey(nil)):
            // The central's user was faster than ours: keep Mconfirm for later.
            phase = .legacy(session, .awaitingPasskey(peerConfirm: mconfirm))
            return []
        case (.pairingConfirm(let mconfirm), .awaitingConfirm(let tk)):
            return legacyConfirm(mconfirm, tk: tk, session: session, now: now)
        case (.pairingRandom(let mrand), .awaitingRandom(let tk, let mconfirm, let srand)):
            guard legacyConfirmValue(tk: tk, random: mrand, session: session) == mconfirm else {
                return fail(.confirmValueFailed, now: now)
            }
            let stk = session.shortened(SMPCrypto.s1(k: tk, r1: srand, r2: mrand))
            var s = session
            s.linkKey = stk
            phase = .awaitingEncryption(s, key: stk)
            return send(.pairingRandom(srand), now: now)
        default:
            return nil
        }
    }

    /// The user typed the passkey (or refused) during legacy Passkey Entry.
    mutating func legacyPasskeyEntered(
        _ answer: PairingUserAnswer, session: PairingSession, peerConfirm: [UInt8]?, now: Duration
    ) -> [SecurityManagerOutput] {
        switch answer {
        case .passkey(let passkey) where passkey <= 999_999:
            let tk = Self.passkeyValue(passkey)
            guard let mconfirm = peerConfirm else {
                phase = .legacy(session, .awaitingConfirm(tk: tk))
                return []
            }
            return legacyConfirm(mconfirm, tk: tk, session: session, now: now)
        case .passkey, .reject:
            return fail(.passkeyEntryFailed, now: now)
        case .accept, .confirm:
            return []
        }
    }

    /// Answers Mconfirm with Sconfirm = c1(TK, Srand, …).
    private mutating func legacyConfirm(_ mconfirm: [UInt8], tk: [UInt8], session: PairingSession, now: Duration) -> [SecurityManagerOutput] {
        let srand = randomBytes(16)
        let sconfirm = legacyConfirmValue(tk: tk, random: srand, session: session)
        phase = .legacy(session, .awaitingRandom(tk: tk, peerConfirm: mconfirm, ourRandom: srand))
        return send(.pairingConfirm(sconfirm), now: now)
    }

    /// c1 with this link's Pairing Request/Response and addresses (§2.2.3).
    func legacyConfirmValue(tk: [UInt8], random: [UInt8], session: PairingSession) -> [UInt8] {
        SMPCrypto.c1(
            k: tk, r: random, preq: SMPCommand.pairingRequest(session.request).encoded(),
            pres: SMPCommand.pairingResponse(session.response).encoded(),
            iat: peer.typeBit, ia: peer.address, rat: local.typeBit, ra: local.address)
    }
}
