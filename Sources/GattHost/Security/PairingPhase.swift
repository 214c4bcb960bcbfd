import GattCore

/// Where a pairing stands (Core Spec Vol 3 Part H §2.1 phases 1–3), one value per link.
enum PairingPhase: Sendable {
    /// No pairing in progress (also after one completed or failed).
    case idle
    /// Phase 1 answered by the user (`confirmPairing`) before our Pairing Response.
    case awaitingAcceptance(PairingSession)
    /// Phase 2, LE legacy pairing (§2.3.5.5).
    case legacy(PairingSession, LegacyPairingStep)
    /// Phase 2, LE Secure Connections (§2.3.5.6).
    case secureConnections(PairingSession, SecureConnectionsStep)
    /// Phase 2 done: the central must encrypt with `key` (STK or LTK, EDIV = Rand = 0).
    case awaitingEncryption(PairingSession, key: [UInt8])
    /// Phase 3 (§3.6.1): ours sent, waiting for the central's keys in this order.
    case keyDistribution(PairingSession, expecting: [SMPCode])
    /// The SMP timer expired (§3.4): nothing more on this link.
    case timedOut
}

/// Steps of LE legacy pairing phase 2 (§2.3.5.5, Figure C.2/C.3).
enum LegacyPairingStep: Sendable {
    /// Passkey Entry with our user typing; a Mconfirm that arrives first is kept.
    case awaitingPasskey(peerConfirm: [UInt8]?)
    /// Waiting for Mconfirm.
    case awaitingConfirm(tk: [UInt8])
    /// Sconfirm sent, waiting for Mrand.
    case awaitingRandom(tk: [UInt8], peerConfirm: [UInt8], ourRandom: [UInt8])
}

/// The public keys and DHKey of an LE Secure Connections pairing (§2.3.5.6.1).
struct KeyExchange: Sendable {
    var peerKey: SMPPublicKey
    var ourKey: SMPPublicKey
    var dhKey: [UInt8]
}

/// Steps of LE Secure Connections phase 2 (§2.3.5.6.2–§2.3.5.6.5).
enum SecureConnectionsStep: Sendable {
    /// Waiting for the central's Pairing Public Key.
    case awaitingPublicKey
    /// Just Works / Numeric Comparison: Cb sent, waiting for Na.
    case awaitingNonce(KeyExchange, ourNonce: [UInt8])
    /// Numeric Comparison: waiting for the user; an Ea that arrives first is kept.
    case awaitingComparison(KeyExchange, na: [UInt8], nb: [UInt8], peerCheck: [UInt8]?)
    /// Passkey Entry with our user typing; a Ca1 that arrives first is kept.
    case awaitingPasskey(KeyExchange, peerConfirm: [UInt8]?)
    /// Passkey Entry round `round` (0–19): waiting for Cai.
    case passkeyConfirm(KeyExchange, passkey: UInt32, round: Int)
    /// Passkey Entry round `round`: Cbi sent, waiting for Nai.
    case passkeyRandom(KeyExchange, passkey: UInt32, round: Int, peerConfirm: [UInt8], ourNonce: [UInt8])
    /// Authentication stage 2 (§2.3.5.6.5): waiting for Ea. `r` is ra = rb.
    case awaitingDHKeyCheck(KeyExchange, na: [UInt8], nb: [UInt8], r: [UInt8])
}

/// What phase 1 negotiated and phase 3 exchanged (§2.3, §3.6).
struct PairingSession: Sendable {
    var request: SMPPairingFeatures
    var response: SMPPairingFeatures
    var method: SMPAssociationModel
    var secureConnections: Bool
    var keySize: Int
    var bonding: Bool
    /// The STK/LTK phase 2 produced (shortened to `keySize`).
    var linkKey: [UInt8] = []
    /// Keys we distributed in phase 3.
    var distributedLTK: (key: [UInt8], ediv: UInt16, rand: UInt64)?
    var distributedIdentity: SMPIdentity?
    var distributedCSRK: [UInt8]?
    /// Keys the central distributed.
    var peerIRK: [UInt8]?
    var peerIdentityAddress: SMPDeviceAddress?
    var peerCSRK: [UInt8]?

    /// A key shortened to `keySize` octets by zeroing its most significant octets (§2.3.4).
    func shortened(_ key: [UInt8]) -> [UInt8] {
        key.enumerated().map { $0.offset < keySize ? $0.element : 0 }
    }
}
