import GattCore

// Pairing on the daemon's side: log lines, prompts nobody can answer, bonds kept.
extension PeripheralDaemon {
    /// A pairing event from the transport's Security Manager.
    func pairing(_ c: PeripheralConnection, _ e: SecurityManagerEvent) {
        switch e {
        case .pairingRequest(let method, let io):
            logger.info("\(c.address): asks to pair (\(method), its IO capability \(io))")
            unanswerable(c, "a pairing confirmation")
        case .displayPasskey(let passkey):
            logger.notice("\(c.address): pairing passkey \(Self.sixDigits(passkey))")
        case .numericComparison(let value):
            logger.info("\(c.address): numeric comparison \(Self.sixDigits(value))")
            unanswerable(c, "a numeric comparison")
        case .passkeyRequest:
            unanswerable(c, "a passkey")
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

    /// A prompt with no control client to answer it: the pairing fails now rather than at the timeout.
    private func unanswerable(_ c: PeripheralConnection, _ what: String) {
        logger.warning("\(c.address): pairing needs \(what) and no control client can answer; refused")
        transport.respondToPairing(c.id, .reject)
    }

    static func sixDigits(_ v: UInt32) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, 6 - s.count)) + s
    }

    /// Keeps a completed bond (the bond store arrives with the next step).
    func saveBond(_ bond: Bond) {}
}
