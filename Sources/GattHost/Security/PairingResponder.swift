import GattCore

/// The LE Security Manager in the responder (peripheral) role for one link
/// (Core Spec Vol 3 Part H §2.3–§2.4, §3). Sans-I/O: SMP PDUs, the time, user
/// answers and the controller's LTK request / encryption change go in; SMP
/// commands to send and events come out.
///
/// Integration, per connection:
/// - every SMP payload (L2CAP CID 0x0006) → `receive(_:now:attempts:)`;
/// - HCI LE Long Term Key Request → `longTermKeyRequest(ediv:rand:)` first, then
///   the bond store (`[Bond].longTermKey(ediv:rand:address:)`);
/// - HCI Encryption Change → `encryptionChanged(enabled:now:)`;
/// - a user's answer → `respond(_:now:)`;
/// - timers: call `tick(now:)` at `nextDeadline`.
public struct PairingResponder: Sendable {
    /// The SMP timeout (§3.4).
    public static let timeout: Duration = .seconds(30)

    /// What we offer and accept.
    public let configuration: SecurityManagerConfiguration
    /// Our address on this link (the responder's, "B" / "ra").
    public let local: SMPDeviceAddress
    /// The central's connection address (the initiator's, "A" / "ia").
    public let peer: SMPDeviceAddress
    /// The key `RepeatedAttempts` is consulted with: the central's identity
    /// address once the host resolved it, else its connection address.
    public var peerIdentity: BluetoothAddress

    let keyPair: SMPKeyPair
    var random: SMPRandomSource
    var phase: PairingPhase = .idle
    /// When the SMP timer expires, while a pairing runs.
    public internal(set) var nextDeadline: Duration?

    /// - Parameters:
    ///   - keyPair: our P-256 key pair; a fresh one by default (tests inject one).
    ///   - random: source of nonces, passkeys and distributed keys; the system's
    ///     cryptographically secure generator by default.
    public init(
        configuration: SecurityManagerConfiguration, local: SMPDeviceAddress, peer: SMPDeviceAddress,
        keyPair: SMPKeyPair = SMPKeyPair(), random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.configuration = configuration
        self.local = local
        self.peer = peer
        self.peerIdentity = peer.address
        self.keyPair = keyPair
        self.random = SMPRandomSource(base: random)
    }

    /// Whether a pairing is in progress (phases 1–3).
    public var isPairing: Bool {
        switch phase {
        case .idle, .timedOut: false
        default: true
        }
    }

    /// Whether the SMP timer expired on this link (§3.4).
    public var hasTimedOut: Bool {
        if case .timedOut = phase { return true }
        return false
    }

    // MARK: - Inputs

    /// Handles one SMP PDU from the central. `attempts` (§2.3.6) refuses a
    /// Pairing Request from a peer that must still wait.
    public mutating func receive(_ payload: [UInt8], now: Duration, attempts: RepeatedAttempts? = nil) -> [SecurityManagerOutput] {
        if case .timedOut = phase { return [] }
        let command: SMPCommand
        do throws(SMPDecodingError) {
            command = try SMPCommand(decoding: payload)
        } catch {
            // An empty PDU carries no command at all: nothing to answer.
            if case .empty = error { return [] }
            // Never answer a (malformed) Pairing Failed with another one.
            if payload.first == SMPCode.pairingFailed.rawValue { return peerFailed(.unspecifiedReason) }
            return fail(error.pairingFailedReason, now: now)
        }
        switch command {
        case .keypressNotification:
            return []
        case .pairingFailed(let reason):
            return peerFailed(reason)
        case .pairingResponse, .securityRequest:
            // Commands only a responder sends (§3.5.2, §3.6.7).
            return fail(.commandNotSupported, now: now)
        case .pairingRequest(let features):
            guard !isPairing else { return fail(.unspecifiedReason, now: now) }
            if attempts?.isBlocked(peerIdentity, now: now) == true {
                return [.send(.pairingFailed(.repeatedAttempts)), .event(.pairingFailed(.repeatedAttempts, remote: false))]
            }
            return pairingRequest(features, now: now)
        default:
            return handle(command, now: now)
        }
    }

    /// The key for an LE Long Term Key Request while this pairing waits for
    /// encryption (EDIV = 0 and Rand = 0: the STK of legacy pairing or the LTK of
    /// Secure Connections), already shortened to the negotiated size; `nil`
    /// otherwise (look in the bond store instead).
    public func longTermKeyRequest(ediv: UInt16, rand: UInt64) -> [UInt8]? {
        guard case .awaitingEncryption(_, let key) = phase, ediv == 0, rand == 0 else { return nil }
        return key
    }

    /// The negotiated key size of the pairing in progress, for the host to check
    /// the controller's encryption key size against.
    public var negotiatedKeySize: Int? { session?.keySize }

    /// What the key of the pairing in progress gives the link once phase 2 is
    /// done (from `longTermKeyRequest` on), so the host can raise the ATT
    /// server's level at the Encryption Change rather than at completion.
    public var pairingSecurity: SMPLinkSecurity? {
        switch phase {
        case .awaitingEncryption(let s, _), .keyDistribution(let s, _):
            SMPLinkSecurity(keySize: s.keySize, authenticated: s.method.isAuthenticated, secureConnections: s.secureConnections)
        default: nil
        }
    }

    /// HCI Encryption Change (or its failure) for this link. After phase 2 this
    /// starts phase 3: we distribute our keys, then wait for the central's.
    public mutating func encryptionChanged(enabled: Bool, now: Duration) -> [SecurityManagerOutput] {
        guard case .awaitingEncryption(let session, _) = phase else { return [] }
        guard enabled else { return fail(.unspecifiedReason, now: now) }
        return distributeKeys(session, now: now)
    }

    /// The user's answer to the pending prompt; answers nobody asked for are ignored.
    public mutating func respond(_ answer: PairingUserAnswer, now: Duration) -> [SecurityManagerOutput] {
        switch phase {
        case .awaitingAcceptance(let session):
            switch answer {
            case .accept: return startPhase2(session, now: now)
            case .reject: return fail(.pairingNotSupported, now: now)
            default: return []
            }
        case .legacy(let session, .awaitingPasskey(let peerConfirm)):
            return legacyPasskeyEntered(answer, session: session, peerConfirm: peerConfirm, now: now)
        case .secureConnections(let session, .awaitingPasskey(let exchange, let peerConfirm)):
            return scPasskeyEntered(answer, session: session, exchange: exchange, peerConfirm: peerConfirm, now: now)
        case .secureConnections(let session, .awaitingComparison(let exchange, let na, let nb, let peerCheck)):
            return comparisonAnswered(answer, session: session, exchange: exchange, na: na, nb: nb, peerCheck: peerCheck, now: now)
        default:
            return []
        }
    }

    /// A Security Request (§3.6.7) asking the central to pair (or to encrypt
    /// with its bond), for accessories that want security at connection. Only
    /// when no pairing runs; the central answers with a Pairing Request or by
    /// encrypting, or ignores it (no timer runs for it).
    public mutating func requestSecurity() -> [SecurityManagerOutput] {
        guard case .idle = phase else { return [] }
        var auth: SMPAuthenticationRequirements = [.secureConnections]
        if configuration.bondable { auth.insert(.bonding) }
        if configuration.offersMITM { auth.insert(.mitm) }
        return [.send(.securityRequest(auth))]
    }

    /// Expires the SMP timer (§3.4): the pairing fails silently — no Pairing
    /// Failed is sent — and SMP stays closed on this link.
    public mutating func tick(now: Duration) -> [SecurityManagerOutput] {
        guard let deadline = nextDeadline, now >= deadline, isPairing else { return [] }
        phase = .timedOut
        nextDeadline = nil
        return [.event(.timedOut)]
    }

    // MARK: - Shared machinery

    var session: PairingSession? {
        switch phase {
        case .awaitingAcceptance(let s), .legacy(let s, _), .secureConnections(let s, _), .awaitingEncryption(let s, _),
            .keyDistribution(let s, _):
            s
        case .idle, .timedOut: nil
        }
    }

    /// Sends `commands` and (re)starts the SMP timer (§3.4: reset whenever a
    /// command is queued for transmission).
    mutating func send(_ commands: SMPCommand..., now: Duration) -> [SecurityManagerOutput] {
        nextDeadline = now + Self.timeout
        return commands.map { .send($0) }
    }

    /// Ends the pairing with Pairing Failed `reason`. Outside a pairing only the
    /// PDU is sent (nothing to report).
    mutating func fail(_ reason: SMPPairingFailedReason, now: Duration) -> [SecurityManagerOutput] {
        let wasPairing = isPairing
        phase = .idle
        nextDeadline = nil
        return [.send(.pairingFailed(reason))] + (wasPairing ? [.event(.pairingFailed(reason, remote: false))] : [])
    }

    /// The central ended the pairing (if one runs); nothing is sent back.
    private mutating func peerFailed(_ reason: SMPPairingFailedReason) -> [SecurityManagerOutput] {
        guard isPairing else { return [] }
        phase = .idle
        nextDeadline = nil
        return [.event(.pairingFailed(reason, remote: true))]
    }

    /// Dispatches a command to the step expecting it; anything else is
    /// unexpected in this state (Unspecified Reason, as Zephyr and Linux answer).
    private mutating func handle(_ command: SMPCommand, now: Duration) -> [SecurityManagerOutput] {
        switch phase {
        case .legacy(let session, let step):
            if let out = legacy(command, session: session, step: step, now: now) { return out }
        case .secureConnections(let session, let step):
            if let out = secureConnections(command, session: session, step: step, now: now) { return out }
        case .keyDistribution(let session, let expecting):
            if let out = receiveKey(command, session: session, expecting: expecting, now: now) { return out }
        default:
            break
        }
        return fail(.unspecifiedReason, now: now)
    }

    mutating func randomBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    mutating func randomPasskey() -> UInt32 { UInt32.random(in: 0...999_999, using: &random) }

    /// TK or r of Passkey Entry: the passkey as a 128-bit little-endian value.
    static func passkeyValue(_ passkey: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: passkey), UInt8(truncatingIfNeeded: passkey >> 8), UInt8(truncatingIfNeeded: passkey >> 16)]
            + [UInt8](repeating: 0, count: 13)
    }
}

/// The injectable random source of a `PairingResponder`.
struct SMPRandomSource: RandomNumberGenerator, Sendable {
    var base: any RandomNumberGenerator & Sendable
    mutating func next() -> UInt64 { base.next() }
}
