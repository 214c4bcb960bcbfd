import GattCore

// Pairing on the daemon's side: log lines, prompts nobody can answer, bonds kept.
extension PeripheralDaemon {
    /// A pairing event from the transport's Security Manager.
    func pairing(_ c: PeripheralConnection, _ e: SecurityManagerEvent) {
        prompts.observe(e, on: c.id)
        switch e {
        case .pairingRequest(let method, let io):
            logger.info("\(c.address): asks to pair (\(method), its IO capability \(io))")
            ask(c, "a pairing confirmation")
        case .displayPasskey(let passkey):
            logger.notice("\(c.address): pairing passkey \(Self.sixDigits(passkey))")
        case .numericComparison(let value):
            logger.info("\(c.address): numeric comparison \(Self.sixDigits(value))")
            ask(c, "a numeric comparison")
        case .passkeyRequest:
            logger.info("\(c.address): asks for the passkey it displays")
            ask(c, "a passkey")
        case .pairingFailed(let reason, let remote):
            logger.warning("\(c.address): pairing failed (\(reason), \(remote ? "sent by the central" : "sent by us"))")
        case .timedOut:
            logger.warning("\(c.address): pairing timed out (30 s); SMP closed on this link")
        case .pairingComplete(let bond, let bonded):
            let kind = "\(bond.secureConnections ? "LE Secure Connections" : "legacy"), \(bond.authenticated ? "authenticated" : "unauthenticated"), key size \(bond.keySize)"
            if bonded {
                setBonds(bondCoordinator.save(bond, maxBonds: settings.maxBonds))
                bondCoordinator.bonded(c.id, identity: bond.address, signs: bond.peerCSRK != nil)
                core.setBonded(c.id)
                logger.info("\(c.address): paired and bonded as \(bond.address) (\(kind))")
            } else {
                logger.info("\(c.address): paired without bonding (\(kind))")
            }
        }
        // After the bond is durable: a watcher never sees `paired` for a bond a crash would lose.
        controlEventHandler?(.pairing(central: c.address.description, ControlPairingEvent(e)))
    }

    /// A prompt that needs a person goes to the watching control clients (its event follows;
    /// answered with `respondToPairing`); with none, the pairing fails now rather than at the
    /// SMP timeout, with a log line saying why.
    private func ask(_ c: PeripheralConnection, _ what: String) {
        guard !prompts.watched else { return }
        logger.warning("\(c.address): pairing needs \(what) and no control client watches to answer; refused")
        prompts.closed(c.id)
        stack.respondToPairing(c.id, .reject, now: now)
    }

    static func sixDigits(_ v: UInt32) -> String { ControlPairingEvent.sixDigits(v) }

    /// The last watcher left: prompts nobody can answer any more fail now.
    func rejectPendingPrompts() {
        for id in prompts.pending.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            prompts.closed(id)
            if let c = core.connections[id] { logger.warning("\(c.address): the last control client left; pairing prompt refused") }
            stack.respondToPairing(id, .reject, now: now)
        }
    }

    /// The bonds to encrypt reconnecting centrals with, down to the half below the seam.
    func setBonds(_ bonds: [Bond]) { stack.callBelow(now: now) { $0.setBonds(bonds); return [] } }

    /// The bond whose IRK resolves `address` when it is a resolvable private address.
    func bondResolving(_ address: BluetoothAddress) -> Bond? { bondCoordinator.resolving(address) }

    /// Reads the bond store and gives its bonds to the transport (at start).
    func loadBonds() {
        let (bonds, irk) = bondCoordinator.load()
        guard bondCoordinator.store != nil else { return }
        setBonds(bonds)
        if let irk { stack.callBelow(now: now) { $0.setLocalIRK(irk); return [] } }
    }

    /// A bonded central that distributed a CSRK: its signed writes verify on this link,
    /// counters at or below the stored one refused (Core Spec Vol 3 Part C §10.4).
    func restoreSigningKey(_ c: PeripheralConnection) {
        guard let key = bondCoordinator.signingKey(for: c.id, address: c.address) else { return }
        core.setSigningKey(c.id, csrk: key.csrk, lastSignCounter: key.lastSignCounter)
    }
}

// Bonds for the control socket (`gattctl bonds`, `gattctl unbond`).
extension PeripheralDaemon {
    /// The bonds, oldest first.
    public var bondList: [StoredBond] { bondCoordinator.bonds }

    /// Forgets the bond of `address` (its file, the transport's copy) and disconnects the
    /// central if it is connected (by that address or an RPA its IRK resolves), so it must
    /// pair again. False when there is no such bond.
    public func unbond(_ address: BluetoothAddress) -> Bool {
        guard let bond = bondCoordinator.remove(address) else { return false }
        transport.removeBond(bond)
        setBonds(bondCoordinator.bonds.map(\.bond))
        let linked = core.connections.values.filter { $0.address == address || bond.resolves($0.address) }
        for c in linked.sorted(by: { $0.id.rawValue < $1.id.rawValue }) { process(core.disconnect(c.id)) }
        return true
    }
}

/// Why a control client's answer to a pairing prompt was not passed on.
public enum PairingAnswerFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownCentral
    case refused(String)
    /// No central named and not exactly one prompt waiting.
    case ambiguous(Int)
    public var description: String {
        switch self {
        case .unknownCentral: "no such central is connected"
        case .refused(let why): why
        case .ambiguous(let n): "\(n) pairing prompts are waiting; name the central"
        }
    }
}

extension PeripheralDaemon {
    /// A control client's answer to the prompt pending for `central` (`accept`, `passkey`,
    /// `confirm`), checked against the question and passed to the transport; nil when it
    /// was passed on.
    public func respondToPairing(central: BluetoothAddress?, accept: Bool?, passkey: UInt32?, confirm: Bool?) -> PairingAnswerFailure? {
        let id: ConnectionID
        if let central {
            guard let c = core.connection(of: central) else { return .unknownCentral }
            id = c
        } else {
            guard prompts.pending.count == 1, let only = prompts.pending.keys.first else { return .ambiguous(prompts.pending.count) }
            id = only
        }
        switch prompts.answer(PairingPrompts.Answer(accept: accept, passkey: passkey, confirm: confirm), on: id) {
        case .failure(let refusal): return .refused(refusal.description)
        case .success(let answer):
            stack.respondToPairing(id, answer, now: now)
            return nil
        }
    }
}
