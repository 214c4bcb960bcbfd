// Enhanced ATT bearers (Vol 3 Part F §3.2.11): the channels a transport accepted on PSM 0x0027
// become bearers of the connection's ATT client; each has its own readiness to send
// (`.received` and `.readyToSend` are every bearer's, in `handle`).

extension Peripheral {
    /// An Enhanced ATT bearer opened, was reconfigured or closed. Ignored for a connection the
    /// core does not know (its `.connected` did not come, or it is gone) and for the fixed channel.
    mutating func enhancedBearer(_ id: BearerID, _ event: EnhancedBearerEvent, now: Duration) -> [PeripheralOutput] {
        guard id.isEnhanced, connections[id.connection] != nil else { return [] }
        switch event {
        case .opened(let mtu):
            guard att.openBearer(id, mtu: mtu) else { return [.event(.warning("\(id): Enhanced ATT bearer reported open twice; ignored"))] }
            return []
        case .reconfigured(let mtu):
            att.reconfigureBearer(id, mtu: mtu)
            return []
        case .closed:
            readyBearers.remove(id)
            return absorb(att.closeBearer(id, now: now))
        }
    }
}

extension Peripheral {
    /// Whether Server Supported Features says EATT Supported (the config's `eatt` and a
    /// transport that can accept Enhanced ATT bearers). Centrals read it; gattd never opens
    /// a bearer itself. Kept across reloads until set again.
    public var enhancedATT: Bool { att.database.enhancedATTSupported }

    public mutating func setEnhancedATT(_ on: Bool) { att.database.setEnhancedATTSupported(on) }
}
