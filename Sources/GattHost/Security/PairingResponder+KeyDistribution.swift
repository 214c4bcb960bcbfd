import GattCore

/// Phase 3, Transport Specific Key Distribution (Core Spec Vol 3 Part H §2.4.3,
/// §3.6): on the encrypted link the responder sends its keys first, then the
/// initiator sends its own, each set in the order of §3.6.1.
extension PairingResponder {
    /// Sends the keys the Pairing Response promised, then waits for the central's.
    mutating func distributeKeys(_ session: PairingSession, now: Duration) -> [SecurityManagerOutput] {
        var s = session
        var commands: [SMPCommand] = []
        let ours = session.response.responderKeyDistribution
        if ours.contains(.encryptionKey) && !session.secureConnections {
            let ltk = s.shortened(randomBytes(16))
            let ediv = UInt16.random(in: .min ... .max, using: &random)
            // Rand = 0 with EDIV = 0 would collide with the STK/SC lookup.
            let rand = UInt64.random(in: 1 ... .max, using: &random)
            s.distributedLTK = (ltk, ediv, rand)
            commands += [.encryptionInformation(longTermKey: ltk), .centralIdentification(ediv: ediv, rand: rand)]
        }
        if ours.contains(.identityKey), let identity = configuration.identity {
            s.distributedIdentity = identity
            commands += [.identityInformation(irk: identity.irk), .identityAddressInformation(type: identity.addressType, address: identity.address)]
        }
        if ours.contains(.signingKey) {
            let csrk = randomBytes(16)
            s.distributedCSRK = csrk
            commands.append(.signingInformation(csrk: csrk))
        }
        var expecting: [SMPCode] = []
        let theirs = session.response.initiatorKeyDistribution
        if theirs.contains(.identityKey) { expecting += [.identityInformation, .identityAddressInformation] }
        if theirs.contains(.signingKey) { expecting.append(.signingInformation) }

        var out: [SecurityManagerOutput] = []
        if !commands.isEmpty {
            nextDeadline = now + Self.timeout
            out = commands.map { .send($0) }
        }
        return out + expectKeys(s, expecting: expecting)
    }

    /// A key from the central during phase 3; `nil` if not the one expected next.
    mutating func receiveKey(_ command: SMPCommand, session: PairingSession, expecting: [SMPCode], now: Duration) -> [SecurityManagerOutput]? {
        guard command.code == expecting.first else { return nil }
        var s = session
        switch command {
        case .identityInformation(let irk): s.peerIRK = irk
        case .identityAddressInformation(let type, let address): s.peerIdentityAddress = SMPDeviceAddress(address, type: type)
        case .signingInformation(let csrk): s.peerCSRK = csrk
        default: return nil
        }
        return expectKeys(s, expecting: Array(expecting.dropFirst()))
    }

    /// Waits for the remaining keys, or completes the pairing when none remain.
    private mutating func expectKeys(_ session: PairingSession, expecting: [SMPCode]) -> [SecurityManagerOutput] {
        guard expecting.isEmpty else {
            phase = .keyDistribution(session, expecting: expecting)
            return []
        }
        phase = .idle
        nextDeadline = nil
        return [.event(.pairingComplete(bond(from: session), bonded: session.bonding))]
    }

    /// The bond that pairing `session` produced.
    func bond(from s: PairingSession) -> Bond {
        let identity = s.peerIdentityAddress ?? peer
        return Bond(
            address: identity.address, addressType: identity.type,
            longTermKey: s.secureConnections ? s.linkKey : s.distributedLTK?.key,
            ediv: s.distributedLTK?.ediv ?? 0, rand: s.distributedLTK?.rand ?? 0,
            keySize: s.keySize, authenticated: s.method.isAuthenticated, secureConnections: s.secureConnections,
            peerIRK: s.peerIRK, peerCSRK: s.peerCSRK, localIdentity: s.distributedIdentity, localCSRK: s.distributedCSRK)
    }
}
