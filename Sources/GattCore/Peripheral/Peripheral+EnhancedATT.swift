// Enhanced ATT bearers (Vol 3 Part F §3.2.11): the channels a transport accepted on PSM 0x0027
// become bearers of the connection's ATT client; each has its own readiness to send.

extension Peripheral {
    /// What a transport reports of one Enhanced ATT bearer. Ignored for a connection the core
    /// does not know (its `.connected` did not come, or it is gone) and for the fixed channel.
    mutating func enhancedBearer(_ id: BearerID, _ event: EnhancedBearerEvent, now: Duration) -> [PeripheralOutput] {
        guard id.isEnhanced, connections[id.connection] != nil else { return [] }
        switch event {
        case .opened(let mtu):
            guard att.openBearer(id, mtu: mtu) else { return [.event(.warning("\(id): Enhanced ATT bearer reported open twice; ignored"))] }
            return []
        case .reconfigured(let mtu):
            att.reconfigureBearer(id, mtu: mtu)
            return []
        case .received(let pdu):
            return absorb(att.receive(pdu, from: id, now: now))
        case .readyToSend:
            guard att.mtu(for: id) != nil else { return [] }
            enhancedReady.insert(id)
            var out: [PeripheralOutput] = []
            pumpEnhanced(id, into: &out)
            return out
        case .closed:
            enhancedReady.remove(id)
            return absorb(att.closeBearer(id, now: now))
        }
    }

    /// Sends the bearer's next PDU if its transport has room (one PDU per `.readyToSend`).
    mutating func pumpEnhanced(_ id: BearerID, into out: inout [PeripheralOutput]) {
        guard enhancedReady.contains(id), let next = att.dequeueOutgoing(for: id) else { return }
        enhancedReady.remove(id)
        out.append(.sendEnhanced(id, next.pdu))
        if let reason = Self.securityError(next.pdu), let i = connections.index(forKey: id.connection),
            !connections.values[i].securityRequested
        {
            connections.values[i].securityRequested = true
            out.append(.requestSecurity(id.connection, .medium, reason: reason))
        }
        absorb(next.outputs, into: &out)
    }
}

extension Peripheral {
    /// Whether Server Supported Features says EATT Supported (the config's `eatt` and a
    /// transport that can accept Enhanced ATT bearers). Centrals read it; gattd never opens
    /// a bearer itself. Kept across reloads until set again.
    public var enhancedATT: Bool { att.database.enhancedATTSupported }

    public mutating func setEnhancedATT(_ on: Bool) { att.database.setEnhancedATTSupported(on) }
}
