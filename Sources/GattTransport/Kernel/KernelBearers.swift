import GattCore

/// The centrals' links on the kernel transport and their ATT bearers, as rules (sans I/O): a
/// link's fixed bearer is its ATT socket, an Enhanced ATT bearer (Core Vol 3 Part F §3.2.11)
/// an EATT channel's; the shell holds the sockets, named here by id. Part of `KernelAdapter`,
/// which passes in its timers and collects the actions.
struct KernelBearers: Sendable {
    /// The connected centrals, their ids, handles and ATT sockets.
    var links = KernelLinkTable()
    /// The open Enhanced ATT bearers.
    var enhanced: [BearerID: KernelEnhancedBearer] = [:]
    /// Which bearer each open bearer socket carries (fixed and Enhanced).
    var sockets: [KernelSocketID: BearerID] = [:]
    /// Security reads after an Encryption Change: the attempts left for each socket's check.
    private var securityChecks: [KernelSocketID: Int] = [:]
    /// Accepted channels waiting for their link's ATT bearer (`+Channels`).
    var waitingChannels: [KernelSocketID: KernelWaitingChannel] = [:]

    /// A link's ATT socket the kernel accepted: its connection (reported), and whether it
    /// ended advertising (the adapter monitor had not reported its connection yet).
    mutating func accepted(
        _ socket: KernelSocketID, handle: UInt16?, peer: KernelBDAddress, security: SecurityLevel, _ out: inout [KernelAction]
    ) -> (id: ConnectionID, endedAdvertising: Bool) {
        let (id, _, endedAdvertising) = links.accepted(socket: socket, handle: handle, peer: peer, security: security)
        sockets[socket] = .fixed(id)
        out.append(.event(.connected(id, TransportPeer(address: peer.address, addressType: peer.type.hciAddressType, handle: handle, security: security))))
        return (id, endedAdvertising)
    }

    /// A PDU read from a bearer's socket, with the link's security level read with it (nil:
    /// unreadable) and, for an Enhanced bearer, the channel's send MTU.
    mutating func received(_ pdu: [UInt8], from socket: KernelSocketID, security: SecurityLevel?, sendMTU: Int?) -> [KernelAction] {
        guard let bearer = sockets[socket] else { return [] }
        var out: [KernelAction] = []
        // The kernel's SMP may have encrypted the link since the last PDU (the central paired
        // after Insufficient Encryption): the core must know before it checks permissions.
        if let security, let link = links[bearer.connection] {
            securityRead(bearer.connection, socket: link.socket, level: security, &out)
        }
        if bearer.isEnhanced {
            guard let entry = enhanced[bearer] else { return out }
            // The kernel answers a Credit Based Reconfigure itself: the central's MTU may have
            // grown since the last PDU, and this one may need it.
            if let mtu = KernelEnhancedBearerPlan.reconfigured(current: entry.mtu, ourMTU: entry.ourMTU, peerMTU: sendMTU) {
                enhanced[bearer]?.mtu = mtu
                out.append(.log(.debug, "\(bearer): the central reconfigured the channel: ATT_MTU \(mtu)"))
                out.append(.event(.enhancedBearer(bearer, .reconfigured(mtu: mtu))))
            }
        }
        out.append(.event(.received(bearer, pdu)))
        return out
    }

    /// The link's level as read from its ATT socket: reported when it moved.
    @discardableResult
    private mutating func securityRead(_ id: ConnectionID, socket: KernelSocketID, level: SecurityLevel, _ out: inout [KernelAction]) -> Bool {
        guard links.securityRead(id, socket: socket, level: level) else { return false }
        out.append(.event(.securityChanged(id, level)))
        return true
    }

    /// Encryption Change or Key Refresh Complete on `handle`, seen by the adapter monitor: the
    /// link's level is read now rather than at the central's next PDU, so a bonded central
    /// that only listens gets its subscriptions back and a Service Changed it is owed. The
    /// raw socket gets the event just before the kernel processes it (and updates the ATT
    /// socket's level), so an unchanged level is read again a few times, 20 ms apart.
    mutating func encryptionChanged(status: UInt8, handle: UInt16, _ out: inout [KernelAction]) {
        for (_, link) in links.links(onHandle: handle) {
            securityChecks[link.socket] = status == 0 ? 10 : 0
            out.append(.readSecurity(link.socket))
        }
    }

    /// The level a `.readSecurity` read (nil: unreadable): reported when it moved, else read
    /// again shortly while the check has attempts left.
    mutating func securityRead(socket: KernelSocketID, level: SecurityLevel?, now: Duration, timers: inout KernelTimers) -> [KernelAction] {
        let attemptsLeft = securityChecks.removeValue(forKey: socket) ?? 0
        guard let bearer = sockets[socket], !bearer.isEnhanced else { return [] }
        let id = bearer.connection
        var out: [KernelAction] = []
        if let level, securityRead(id, socket: socket, level: level, &out) { return out }
        if attemptsLeft > 0, links.link(id, socket: socket) != nil {
            timers.add(.checkSecurity(id, socket: socket, attemptsLeft: attemptsLeft - 1), at: now + .milliseconds(20))
        }
        return out
    }

    /// A check's time came: read the level again (while the link is the same).
    mutating func checkSecurity(_ id: ConnectionID, socket: KernelSocketID, attemptsLeft: Int, _ out: inout [KernelAction]) {
        guard links.link(id, socket: socket) != nil else { return }
        securityChecks[socket] = attemptsLeft
        out.append(.readSecurity(socket))
    }

    /// A bearer's socket closed (EOF or an error): a link's ATT socket ends the link (its id,
    /// when it did), an Enhanced ATT channel's its bearer.
    mutating func socketClosed(
        _ socket: KernelSocketID, why: String?, now: Duration, timers: inout KernelTimers, _ out: inout [KernelAction]
    ) -> ConnectionID? {
        guard let bearer = sockets.removeValue(forKey: socket) else { return nil }
        out.append(.close(socket))
        if bearer.isEnhanced {
            enhanced[bearer] = nil
            out.append(.log(.debug, "\(bearer): Enhanced ATT bearer closed"))
            out.append(.event(.enhancedBearer(bearer, .closed)))
            return nil
        }
        let id = bearer.connection
        guard let link = links.closed(id, socket: socket) else { return nil }
        securityChecks[socket] = nil
        closeEnhancedBearers(of: id, &out)
        reportDisconnection(id, link, why: why, waited: false, now: now, timers: &timers, &out)
        return id
    }

    /// Reports the disconnection once its HCI reason is known, or after a short wait for it.
    mutating func reportDisconnection(
        _ id: ConnectionID, _ link: KernelLink, why: String?, waited: Bool, now: Duration, timers: inout KernelTimers, _ out: inout [KernelAction]
    ) {
        switch links.disconnection(of: id, link, why: why, waited: waited) {
        case .wait:
            timers.add(.reportDisconnection(id, link, why: why), at: now + .milliseconds(100))
        case .report(let reason, let detail):
            out.append(.event(.disconnected(id, reason: reason, detail: detail)))
        }
    }

    /// The adapter went: every link is gone, reported (those awaiting their reason first),
    /// and every socket closed. Nothing of theirs waits any more (`timers` is the adapter's
    /// to clear).
    mutating func adapterLost(_ why: String, timers: inout KernelTimers, _ out: inout [KernelAction]) {
        for job in timers.remove(where: { if case .reportDisconnection = $0 { true } else { false } }) {
            guard case .reportDisconnection(let id, let link, let reason) = job else { continue }
            reportDisconnection(id, link, why: reason, waited: true, now: .zero, timers: &timers, &out)
        }
        for socket in waitingChannels.keys.sorted() { out.append(.close(socket)) }
        waitingChannels = [:]
        closeEnhancedBearers(of: nil, &out)
        for (id, link) in links.removeAll() {
            sockets[link.socket] = nil
            out.append(.close(link.socket))
            // Connection Terminated By Local Host: the adapter itself went.
            out.append(.event(.disconnected(id, reason: HCIStatus(0x16), detail: "adapter \(why)")))
        }
        securityChecks = [:]
    }

    /// gattd closes: every socket, to close without reporting anything.
    mutating func close() -> [KernelSocketID] {
        let all = sockets.keys.sorted() + waitingChannels.keys.sorted()
        self = KernelBearers()
        return all
    }

    /// The socket a bearer's PDUs go out on: its link's for the fixed bearer, its channel's for an
    /// Enhanced one.
    func socket(of id: BearerID) -> KernelSocketID? {
        id.isEnhanced ? enhanced[id]?.socket : links[id.connection]?.socket
    }

    /// HCI Disconnect on the central's link (the bearer's ECONNRESET then reports it). Without a
    /// handle or an adapter its socket is closed, and a closed socket reports nothing: the link
    /// ends here and its disconnection is reported now (its id, when it did).
    mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, adapterReady: Bool, _ out: inout [KernelAction]) -> ConnectionID? {
        guard let link = links[id] else { return nil }
        if let handle = link.handle, adapterReady {
            out.append(.hci(.disconnect(handle: handle, reason: reason), answered: false, failure: "cannot disconnect \(link.peer.address)"))
            return nil
        }
        guard links.closed(id, socket: link.socket) != nil else { return nil }
        sockets[link.socket] = nil
        securityChecks[link.socket] = nil
        out.append(.close(link.socket))
        closeEnhancedBearers(of: id, &out)
        // Connection Terminated By Local Host.
        out.append(.event(.disconnected(id, reason: HCIStatus(0x16), detail: "gattd closed the link's ATT socket")))
        return id
    }

    /// Raises the socket's BT_SECURITY, so the kernel sends an SMP Security Request and the
    /// central pairs or re-encrypts before it retries (as iOS does).
    func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError) -> [KernelAction] {
        guard let link = links[id], sockets[link.socket] != nil else { return [] }
        let what = reason == .insufficientAuthentication ? "Insufficient Authentication" : "Insufficient Encryption"
        return [.requestSecurity(link.socket, level, id, what: what, peer: link.peer.address)]
    }

    /// LE Connection Complete in the peripheral role: true when it ended advertising.
    mutating func connectionComplete(status: UInt8, handle: UInt16) -> Bool {
        links.connectionComplete(status: status, handle: handle)
    }

    /// Disconnection Complete: its reason is kept for the socket's close.
    mutating func disconnectionComplete(status: UInt8, handle: UInt16, reason: UInt8) {
        links.disconnectionComplete(status: status, handle: handle, reason: reason)
    }
}
