import GattCore

/// The LE Security Manager on the H4 path (Core Spec Vol 3 Part H): one `PairingResponder` per
/// connection, the bonds LE Long Term Key Requests are answered from, and the
/// repeated-attempts back-off across links. `Host` keeps the entry points and the links'
/// encryption; SMP commands go out through the ACL scheduler it names, events come back.
struct HostSecurity: Sendable {
    /// The Security Manager of each link (when `configuration.security` is set).
    private(set) var responders: [UInt16: PairingResponder] = [:] {
        // Kept here, not computed for every `nextDeadline`: reading a responder out of the
        // dictionary copies it whole, and the transport asks after every event.
        didSet { deadline = responders.values.compactMap(\.nextDeadline).min() }
    }
    /// The earliest SMP timer of the links (`responders`).
    private(set) var deadline: Duration?
    /// Repeated-attempts back-off (Vol 3 Part H §2.3.6), kept across links.
    private var attempts = RepeatedAttempts()
    /// What LE Long Term Key Requests are answered from (`setBonds`); a bonded pairing on
    /// this host adds its bond here too.
    var bonds: [Bond] = []

    /// A new link gets its responder; a bonded central's identity is known from the start.
    mutating func open(_ handle: UInt16, configuration: SecurityManagerConfiguration, local: SMPDeviceAddress, peer: SMPDeviceAddress) {
        var r = PairingResponder(configuration: configuration, local: local, peer: peer)
        if let bond = bonds.bond(for: peer.address) { r.peerIdentity = bond.address }
        responders[handle] = r
    }

    /// The link dropped.
    mutating func close(_ handle: UInt16) { responders[handle] = nil }

    /// The user's answer to a pairing prompt; nil without a responder on the link.
    mutating func respond(_ handle: UInt16, _ answer: PairingUserAnswer, now: Duration, acl: inout ACLScheduler) -> [HostOutput]? {
        guard var r = responders[handle] else { return nil }
        let out = r.respond(answer, now: now)
        responders[handle] = r
        return perform(out, handle: handle, now: now, acl: &acl)
    }

    /// A Security Request (§3.6.7) when no pairing runs on the link; nil without a responder.
    mutating func requestSecurity(_ handle: UInt16, now: Duration, acl: inout ACLScheduler) -> [HostOutput]? {
        guard var r = responders[handle] else { return nil }
        let out = r.requestSecurity()
        responders[handle] = r
        return perform(out, handle: handle, now: now, acl: &acl)
    }

    /// SMP PDUs (L2CAP CID 0x0006). Without a responder (pairing not configured), a
    /// Pairing Request gets Pairing Failed, Pairing Not Supported.
    mutating func receive(_ payload: [UInt8], handle: UInt16, now: Duration, acl: inout ACLScheduler) -> [HostOutput] {
        guard var r = responders[handle] else {
            if let response = SMPPDU.responseWithoutPairingSupport(to: payload) {
                acl.queue(frame: L2CAPBasicFrame(channelID: .smp, payload: response.encoded()), on: handle)
            }
            return []
        }
        let out = r.receive(payload, now: now, attempts: attempts)
        responders[handle] = r
        return perform(out, handle: handle, now: now, acl: &acl)
    }

    /// The key for an LE Long Term Key Request: the pairing in progress's (EDIV 0, Rand 0),
    /// else a bond's (SC: EDIV 0, Rand 0 by address of the link's central, `peer`; legacy: by
    /// EDIV and Rand).
    func longTermKey(handle: UInt16, rand: UInt64, ediv: UInt16, peer: BluetoothAddress) -> (key: [UInt8], security: SMPLinkSecurity?)? {
        if let r = responders[handle], let k = r.longTermKeyRequest(ediv: ediv, rand: rand) { return (k, r.pairingSecurity) }
        guard let bond = bondForKeyRequest(ediv: ediv, rand: rand, address: peer), let key = bond.longTermKey else { return nil }
        return (key, bond.security)
    }

    private func bondForKeyRequest(ediv: UInt16, rand: UInt64, address: BluetoothAddress) -> Bond? {
        if ediv == 0 && rand == 0 {
            guard let b = bonds.bond(for: address), b.secureConnections, b.longTermKey != nil else { return nil }
            return b
        }
        return bonds.first { !$0.secureConnections && $0.ediv == ediv && $0.rand == rand && $0.longTermKey != nil }
    }

    /// The link's encryption changed: the responder starts key distribution (phase 3).
    mutating func encryptionChanged(_ handle: UInt16, enabled: Bool, now: Duration, acl: inout ACLScheduler) -> [HostOutput] {
        guard var r = responders[handle] else { return [] }
        let smp = r.encryptionChanged(enabled: enabled, now: now)
        responders[handle] = r
        return perform(smp, handle: handle, now: now, acl: &acl)
    }

    /// Runs the SMP timers (§3.4).
    mutating func tick(now: Duration, acl: inout ACLScheduler) -> [HostOutput] {
        var out: [HostOutput] = []
        for handle in responders.keys.sorted() {
            guard var r = responders[handle], let d = r.nextDeadline, d <= now else { continue }
            let smp = r.tick(now: now)
            responders[handle] = r
            out += perform(smp, handle: handle, now: now, acl: &acl)
        }
        return out
    }

    /// A responder's outputs: commands queued as SMP frames, events reported up; failures
    /// and successes feed the repeated-attempts back-off; a bonded pairing's bond is kept.
    private mutating func perform(_ outputs: [SecurityManagerOutput], handle: UInt16, now: Duration, acl: inout ACLScheduler) -> [HostOutput] {
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
