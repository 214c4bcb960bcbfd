import GattCore

// The LE Security Manager on the H4 path (Core Spec Vol 3 Part H) and link encryption
// (Vol 4 Part E §7.7.8, §7.7.39, §7.7.65.5, §7.8.25/26): one `PairingResponder` per
// connection, the bonds the daemon loaded, and the repeated-attempts back-off across links.
extension Host {
    /// The bonds LE Long Term Key Requests are answered from (the daemon's store; a
    /// bonded pairing on this host adds its bond here too).
    public mutating func setBonds(_ bonds: [Bond]) { self.bonds = bonds }

    /// The user's answer to a pairing prompt on `id`.
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [HostOutput] {
        self.now = now
        guard var r = responders[id.rawValue] else { return [] }
        let out = r.respond(answer, now: now)
        responders[id.rawValue] = r
        return perform(out, handle: id.rawValue) + pumpACL()
    }

    /// Sends a Security Request (§3.6.7) on `id` when no pairing runs there and the link
    /// is not encrypted yet.
    public mutating func requestSecurity(_ id: ConnectionID, now: Duration) -> [HostOutput] {
        self.now = now
        guard var r = responders[id.rawValue], connections[id.rawValue]?.security == .low else { return [] }
        let out = r.requestSecurity()
        responders[id.rawValue] = r
        return perform(out, handle: id.rawValue) + pumpACL()
    }

    /// A new link gets its responder (when pairing is configured).
    mutating func openSecurity(_ c: LEConnectionComplete) {
        guard var smp = configuration.security else { return }
        let ownType: BluetoothAddressType = configuration.advertising.ownAddressType.usesRandomAddress ? .random : .public
        if let irk = configuration.localIRK { smp.identity = localIdentity(irk: irk) }
        // LE Enhanced Connection Complete carries 00:00:00:00:00:00 unless the controller made
        // the private address (Vol 4 Part E §7.7.65.10): then it is the one we advertised.
        let controllerRPA = c.localResolvablePrivateAddress.flatMap { $0 == .zero ? nil : $0 }
        var r = PairingResponder(
            configuration: smp, local: SMPDeviceAddress(controllerRPA ?? advertisedAddress, type: ownType),
            peer: SMPDeviceAddress(c.peerAddress, type: c.peerAddressType))
        if let bond = bonds.bond(for: c.peerAddress) { r.peerIdentity = bond.address }
        responders[c.handle] = r
    }

    /// SMP PDUs (L2CAP CID 0x0006). Without a responder (pairing not configured), a
    /// Pairing Request gets Pairing Failed, Pairing Not Supported.
    mutating func handleSMP(_ payload: [UInt8], handle: UInt16) -> [HostOutput] {
        guard var r = responders[handle] else {
            if let response = SMPPDU.responseWithoutPairingSupport(to: payload) {
                acl.queue(frame: L2CAPBasicFrame(channelID: .smp, payload: response.encoded()), on: handle)
            }
            return []
        }
        let out = r.receive(payload, now: now, attempts: attempts)
        responders[handle] = r
        return perform(out, handle: handle)
    }

    /// LE Long Term Key Request: the key of the pairing in progress (EDIV 0, Rand 0), else a
    /// bond's (SC: EDIV 0, Rand 0 by address; legacy: by EDIV and Rand), else a negative reply.
    mutating func longTermKeyRequested(handle: UInt16, rand: UInt64, ediv: UInt16) -> [HostOutput] {
        var key: [UInt8]?
        var security: SMPLinkSecurity?
        if let r = responders[handle], let k = r.longTermKeyRequest(ediv: ediv, rand: rand) {
            (key, security) = (k, r.pairingSecurity)
        } else if let c = connections[handle], let bond = bondForKeyRequest(ediv: ediv, rand: rand, address: c.peerAddress) {
            (key, security) = (bond.longTermKey, bond.security)
        }
        guard let key, connections[handle] != nil else {
            commands.append(.leLongTermKeyRequestNegativeReply(handle: handle))
            return pumpCommands()
        }
        connections[handle]?.pendingSecurity = security
        commands.append(.leLongTermKeyRequestReply(handle: handle, longTermKey: key))
        return pumpCommands()
    }

    private func bondForKeyRequest(ediv: UInt16, rand: UInt64, address: BluetoothAddress) -> Bond? {
        if ediv == 0 && rand == 0 {
            guard let b = bonds.bond(for: address), b.secureConnections, b.longTermKey != nil else { return nil }
            return b
        }
        return bonds.first { !$0.secureConnections && $0.ediv == ediv && $0.rand == rand && $0.longTermKey != nil }
    }

    /// Encryption Change (§7.7.8) or Encryption Key Refresh Complete (§7.7.39): the link's
    /// level from the key the LTK request was answered with, reported up; the responder
    /// starts key distribution (phase 3).
    mutating func encryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool) -> [HostOutput] {
        guard var c = connections[handle] else { return [] }
        var out: [HostOutput] = []
        let on = status == .success && enabled
        if status == .success {
            let link = on ? c.pendingSecurity : nil
            c.security = on ? (link?.level ?? max(c.security, .medium)) : .low
            c.keySize = on ? (link?.keySize ?? c.keySize) : nil
            connections[handle] = c
            out.append(.event(.transport(.securityChanged(c.id, c.security, keySize: c.keySize))))
        } else {
            out.append(.event(.warning("connection \(handle): encryption failed: \(status)")))
        }
        if var r = responders[handle] {
            let smp = r.encryptionChanged(enabled: on, now: now)
            responders[handle] = r
            out += perform(smp, handle: handle)
        }
        return out + pumpACL()
    }

    /// The earliest SMP timer of any link.

    /// Runs the SMP timers (§3.4).
    mutating func tickSecurity(now: Duration) -> [HostOutput] {
        var out: [HostOutput] = []
        for handle in responders.keys.sorted() {
            guard var r = responders[handle], let d = r.nextDeadline, d <= now else { continue }
            let smp = r.tick(now: now)
            responders[handle] = r
            out += perform(smp, handle: handle)
        }
        return out
    }

    /// A responder's outputs: commands queued as SMP frames, events reported up; failures
    /// and successes feed the repeated-attempts back-off; a bonded pairing's bond is kept.
    private mutating func perform(_ outputs: [SecurityManagerOutput], handle: UInt16) -> [HostOutput] {
        guard let r = responders[handle] else { return [] }
        attempts.observe(outputs, peer: r.peerIdentity, now: now)
        var out: [HostOutput] = []
        for o in outputs {
            switch o {
            case .send(let command):
                acl.queue(frame: L2CAPBasicFrame(channelID: .smp, payload: command.encoded()), on: handle)
            case .event(let e):
                if case .pairingComplete(let bond, bonded: true) = e {
                    bonds.removeAll { $0.address == bond.address }
                    bonds.append(bond)
                }
                out.append(.event(.transport(.pairing(ConnectionID(handle), e))))
            }
        }
        return out
    }
}
