import GattCore

// The LE Security Manager on the H4 path (Core Spec Vol 3 Part H; the responders and bonds are
// `HostSecurity`'s) and link encryption (Vol 4 Part E §7.7.8, §7.7.39, §7.7.65.5, §7.8.25/26).
extension Host {
    /// The bonds LE Long Term Key Requests are answered from (the daemon's store; a
    /// bonded pairing on this host adds its bond here too).
    public var bonds: [Bond] { security.bonds }

    /// The bonds LE Long Term Key Requests are answered from from now on.
    public mutating func setBonds(_ bonds: [Bond]) { security.bonds = bonds }

    /// The user's answer to a pairing prompt on `id`.
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [HostOutput] {
        self.now = now
        guard let out = security.respond(id.rawValue, answer, now: now, acl: &acl) else { return [] }
        return out + pumpACL()
    }

    /// Sends a Security Request (§3.6.7) on `id` when no pairing runs there and the link
    /// is not encrypted yet.
    public mutating func requestSecurity(_ id: ConnectionID, now: Duration) -> [HostOutput] {
        self.now = now
        guard connections[id.rawValue]?.security == .low, let out = security.requestSecurity(id.rawValue, now: now, acl: &acl) else { return [] }
        return out + pumpACL()
    }

    /// A new link gets its responder (when pairing is configured).
    mutating func openSecurity(_ c: LEConnectionComplete) {
        guard var smp = configuration.security else { return }
        let ownType: BluetoothAddressType = configuration.advertising.ownAddressType.usesRandomAddress ? .random : .public
        if let irk = configuration.localIRK { smp.identity = localIdentity(irk: irk) }
        // LE Enhanced Connection Complete carries 00:00:00:00:00:00 unless the controller made
        // the private address (Vol 4 Part E §7.7.65.10): then it is the one we advertised.
        let controllerRPA = c.localResolvablePrivateAddress.flatMap { $0 == .zero ? nil : $0 }
        security.open(
            c.handle, configuration: smp, local: SMPDeviceAddress(controllerRPA ?? advertisedAddress, type: ownType),
            peer: SMPDeviceAddress(c.peerAddress, type: c.peerAddressType))
    }

    /// LE Long Term Key Request: the key of the pairing in progress or of a bond
    /// (`HostSecurity.longTermKey`), else a negative reply.
    mutating func longTermKeyRequested(handle: UInt16, rand: UInt64, ediv: UInt16) -> [HostOutput] {
        guard let c = connections[handle], let found = security.longTermKey(handle: handle, rand: rand, ediv: ediv, peer: c.peerAddress) else {
            commands.append(.leLongTermKeyRequestNegativeReply(handle: handle))
            return pumpCommands()
        }
        linkTable.keyGiven(handle, worth: found.security)
        commands.append(.leLongTermKeyRequestReply(handle: handle, longTermKey: found.key))
        return pumpCommands()
    }

    /// Encryption Change (§7.7.8) or Encryption Key Refresh Complete (§7.7.39): the link's
    /// level from the key the LTK request was answered with, reported up; the responder
    /// starts key distribution (phase 3).
    mutating func encryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool) -> [HostOutput] {
        guard connections[handle] != nil else { return [] }
        var out: [HostOutput] = []
        let on = status == .success && enabled
        if status == .success {
            if let c = linkTable.encryptionChanged(handle, on: on) {
                out.append(.event(.transport(.securityChanged(c.id, c.security, keySize: c.keySize))))
            }
        } else {
            out.append(.event(.warning("connection \(handle): encryption failed: \(status)")))
        }
        out += security.encryptionChanged(handle, enabled: on, now: now, acl: &acl)
        return out + pumpACL()
    }
}
