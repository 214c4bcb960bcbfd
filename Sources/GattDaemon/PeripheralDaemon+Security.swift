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
                saveBond(bond)
                logger.info("\(c.address): paired and bonded as \(bond.address) (\(kind))")
            } else {
                logger.info("\(c.address): paired without bonding (\(kind))")
            }
        }
    }

    /// A prompt that needs a person. The control socket does not carry pairing prompts
    /// yet (`respondToPairing` is ready for it), so the pairing fails now rather than at
    /// the SMP timeout, with a log line saying why.
    private func ask(_ c: PeripheralConnection, _ what: String) {
        logger.warning("\(c.address): pairing needs \(what) and no control client can answer; refused")
        transport.respondToPairing(c.id, .reject)
    }

    static func sixDigits(_ v: UInt32) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, 6 - s.count)) + s
    }

    /// The bond whose IRK resolves `address` when it is a resolvable private address
    /// (Vol 6 Part B §1.3.2.3), not the bond's own identity address.
    func bondResolving(_ address: BluetoothAddress) -> Bond? {
        bonds.lazy.map(\.bond).first { $0.address != address && $0.resolves(address) }
    }

    private func removeBondFile(_ address: BluetoothAddress) {
        do {
            try bondStore?.remove(address)
        } catch {
            logger.error("\(error)")
        }
    }

    /// Reads the bond store and gives its bonds to the transport (at start).
    func loadBonds() {
        guard let store = bondStore else { return }
        let (loaded, problems) = store.load()
        for p in problems { logger.warning("\(p)") }
        bonds = loaded
        if !loaded.isEmpty { logger.info("loaded \(loaded.count) bond\(loaded.count == 1 ? "" : "s") from \(store.directory.path)") }
        transport.setBonds(loaded.map(\.bond))
    }

    /// Keeps a completed bond: written durably before the pairing is reported complete,
    /// the oldest evicted beyond `security.max_bonds`, and the transport given the new set.
    func saveBond(_ bond: Bond) {
        let stored = StoredBond(bond: bond, created: BondStore.unixTime())
        bonds.removeAll { $0.bond.address == bond.address }
        bonds.append(stored)
        if let store = bondStore {
            do {
                try store.save(stored)
            } catch {
                logger.error("\(error); the bond lasts only until gattd stops")
            }
        }
        if let max = configuration.maxBonds, bonds.count > max {
            for old in bonds.prefix(bonds.count - max) {
                removeBondFile(old.bond.address)
                logger.info("\(old.bond.address): bond evicted (max_bonds \(max))")
            }
            bonds.removeFirst(bonds.count - max)
        }
        transport.setBonds(bonds.map(\.bond))
    }
}

// Bonds for the control socket (`gattctl bonds`, `gattctl unbond`).
extension PeripheralDaemon {
    /// The bonds, oldest first.
    public var bondList: [StoredBond] { bonds }

    /// Forgets the bond of `address` (its file, the transport's copy) and disconnects the
    /// central if it is connected (by that address or an RPA its IRK resolves), so it must
    /// pair again. False when there is no such bond.
    public func unbond(_ address: BluetoothAddress) -> Bool {
        guard let stored = bonds.first(where: { $0.bond.address == address }) else { return false }
        bonds.removeAll { $0.bond.address == address }
        removeBondFile(address)
        transport.removeBond(stored.bond)
        transport.setBonds(bonds.map(\.bond))
        logger.info("\(address): bond removed")
        let linked = core.connections.values.filter { $0.address == address || stored.bond.resolves($0.address) }
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
            transport.respondToPairing(id, answer)
            return nil
        }
    }
}
