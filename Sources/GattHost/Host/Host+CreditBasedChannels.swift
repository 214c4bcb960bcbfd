import GattCore

// Credit-based L2CAP channels and Enhanced ATT bearers (Core Spec Vol 3 Part A §4.22–§4.28,
// Part F §3.2.11): the entry points; the rules and the channels are `CreditBasedChannels`'.
// The layer above (the H4 transport) sees `.channel` events and calls `send(sdu:on:)`,
// `consumed(on:)` and `close(_:)`; the core sees its Enhanced ATT bearers.
extension Host {
    /// Accept credit-based channels to exactly these servers from now on (others are refused,
    /// LE_PSM not supported); channels already open stay open.
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) { channels.servers = servers }

    /// Accept Enhanced ATT bearers from now on (`true`) or refuse PSM 0x0027 (LE_PSM not
    /// supported); bearers already open stay.
    public mutating func setEnhancedATT(_ enabled: Bool) { channels.enhancedATT = enabled }

    /// The channels open on the links.
    public var creditBasedChannels: [CreditBasedChannelID: CreditBasedChannel] { channels.open }

    /// One SDU for the central (after `.ready` named the channel). Longer than the central's MTU: dropped, with a warning.
    public mutating func send(sdu: [UInt8], on id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        if let refused = channels.queue(sdu: sdu, on: id, acl: &acl) { return refused }
        return pumpACL()
    }

    /// The layer above took the oldest SDU received on `id`: its credits go back to the central.
    public mutating func consumed(on id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        guard channels.consumed(on: id, acl: &acl, identifiers: &signalling) else { return [] }
        return pumpACL()
    }

    /// From now on `.ready` names the channel as soon as its SDUs have left, even while the
    /// central gives no credits: for a program that left, whose last SDU must go before the
    /// channel closes (a `.ready` without credits takes no SDU: there is none).
    public mutating func readyWhenSent(_ id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        guard channels.readyWhenSent(id, acl: &acl) else { return [] }
        return pumpACL()
    }

    /// Disconnects a channel (Disconnection Request, §4.6); no `.closed` follows.
    public mutating func close(_ id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        channels.disconnect(id, now: now, acl: &acl, identifiers: &signalling)
        return pumpACL()
    }

    /// Closes an Enhanced ATT bearer's channel (Disconnection Request); no `.closed` follows.
    public mutating func closeEnhancedBearer(_ bearer: BearerID, now: Duration) -> [HostOutput] {
        let id = CreditBasedChannelID(bearer)
        guard channels.eattBearers.contains(id) else { return [] }
        return close(id, now: now)
    }
}

extension Host {
    /// The LE signalling commands of credit-based channels; nil for the others. A server's
    /// security requirement is checked against the link and our bonds (§4.23).
    mutating func handleChannelSignalling(_ pdu: LESignallingPDU, handle: UInt16) -> [HostOutput]? {
        let (link, bonds) = (connections[handle], security.bonds)
        return channels.handleSignalling(pdu, handle: handle, now: now, acl: &acl, identifiers: &signalling, warnings: &linkTable.warnings) {
            CreditBasedChannels.securityRefusal($0, link: link, bonds: bonds)
        }
    }
}
