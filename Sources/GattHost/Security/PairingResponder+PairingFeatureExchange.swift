import GattCore

/// Phase 1, Pairing Feature Exchange (Core Spec Vol 3 Part H §2.3, §3.5.1–§3.5.2).
extension PairingResponder {
    /// Checks a Pairing Request, negotiates, and answers (or asks the user first).
    mutating func pairingRequest(_ request: SMPPairingFeatures, now: Duration) -> [SecurityManagerOutput] {
        let c = configuration
        guard (7...16).contains(request.maximumEncryptionKeySize) else { return refuse(.invalidParameters, now: now) }
        let sc = request.authenticationRequirements.contains(.secureConnections)
        // Secure Connections Only mode refuses legacy pairing (§2.3.5.1).
        guard sc || !c.secureConnectionsOnly else { return refuse(.authenticationRequirements, now: now) }
        // With Secure Connections a central's OOB flag selects OOB (§2.3.5.1): we have no OOB data to give.
        guard !(sc && request.oobDataPresent) else { return refuse(.oobNotAvailable, now: now) }
        let keySize = Int(min(request.maximumEncryptionKeySize, 16))
        guard keySize >= c.minimumKeySize else { return refuse(.encryptionKeySize, now: now) }

        let response = responseFeatures(to: request, secureConnections: sc)
        let method = SMPAssociationModel.select(initiator: request, responder: response, secureConnections: sc)
        guard method.isAuthenticated || !c.requireMITM else { return refuse(.authenticationRequirements, now: now) }

        let session = PairingSession(
            request: request, response: response, method: method, secureConnections: sc, keySize: keySize,
            bonding: response.authenticationRequirements.contains(.bonding))
        // The SMP timer runs from the Pairing Request on.
        nextDeadline = now + Self.timeout
        if c.confirmPairing {
            phase = .awaitingAcceptance(session)
            return [.event(.pairingRequest(method: method, peerIOCapability: request.ioCapability))]
        }
        return startPhase2(session, now: now)
    }

    /// Refuses a Pairing Request: Pairing Failed, reported to the host as well.
    private mutating func refuse(_ reason: SMPPairingFailedReason, now: Duration) -> [SecurityManagerOutput] {
        fail(reason, now: now) + [.event(.pairingFailed(reason, remote: false))]
    }

    /// Our Pairing Response: bonding only if both want it; MITM when required or
    /// when our IO capability allows it; Secure Connections always offered; keys
    /// only those both sides can use (§3.6.1): none without bonding, no EncKey with
    /// Secure Connections, never LinkKey; from the central only IdKey and Sign.
    func responseFeatures(to request: SMPPairingFeatures, secureConnections sc: Bool) -> SMPPairingFeatures {
        let c = configuration
        let bonding = c.bondable && request.authenticationRequirements.contains(.bonding)
        var auth: SMPAuthenticationRequirements = [.secureConnections]
        if bonding { auth.insert(.bonding) }
        if c.offersMITM { auth.insert(.mitm) }
        var ours: SMPKeyDistribution = []
        if !sc { ours.insert(.encryptionKey) }
        if c.identity != nil { ours.insert(.identityKey) }
        if c.distributeSigningKey { ours.insert(.signingKey) }
        let theirs: SMPKeyDistribution = [.identityKey, .signingKey]
        return SMPPairingFeatures(
            ioCapability: c.ioCapability, oobDataPresent: false, authenticationRequirements: auth, maximumEncryptionKeySize: 16,
            initiatorKeyDistribution: bonding ? request.initiatorKeyDistribution.intersection(theirs) : [],
            responderKeyDistribution: bonding ? request.responderKeyDistribution.intersection(ours) : [])
    }

    /// Sends the Pairing Response and enters phase 2 (§2.3.5.5 / §2.3.5.6).
    mutating func startPhase2(_ session: PairingSession, now: Duration) -> [SecurityManagerOutput] {
        let out = send(.pairingResponse(session.response), now: now)
        if session.secureConnections {
            phase = .secureConnections(session, .awaitingPublicKey)
            return out
        }
        switch session.method {
        case .passkeyDisplay:
            let passkey = randomPasskey()
            phase = .legacy(session, .awaitingConfirm(tk: Self.passkeyValue(passkey)))
            return out + [.event(.displayPasskey(passkey))]
        case .passkeyInput:
            phase = .legacy(session, .awaitingPasskey(peerConfirm: nil))
            return out + [.event(.passkeyRequest)]
        case .justWorks, .numericComparison:
            phase = .legacy(session, .awaitingConfirm(tk: [UInt8](repeating: 0, count: 16)))
            return out
        }
    }
}
