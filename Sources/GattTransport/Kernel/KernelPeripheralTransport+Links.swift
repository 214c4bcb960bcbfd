import GattCore
import GattHost
import NIOCore

// The centrals' ATT bearers of the kernel transport.
extension KernelPeripheralTransport {
    // MARK: - Links

    func accepted(_ bearer: KernelATTBearer) {
        guard lifecycle.isReady else {
            bearer.close()
            return
        }
        let handle = bearer.connectionHandle()
        let security = (try? bearer.securityLevel())?.level ?? .low
        let (id, socket, endedAdvertising) = links.accepted(handle: handle, peer: bearer.peer, security: security)
        attSockets[socket] = bearer
        let peer = TransportPeer(address: bearer.peer.address, addressType: bearer.peer.type.hciAddressType, handle: handle, security: security)
        onEvent?(.connected(id, peer))
        // The monitor saw the connection first (`endedAdvertising` false: it reported the
        // handle): its parameters so far. Otherwise what `linkProcedures` has for the handle is
        // an earlier link's: the values come with the monitor's event, and until then (or for
        // a link that was up before the monitor) they are unknown; link requests are taken.
        if let handle {
            if !endedAdvertising, let link = linkProcedures.links[handle] {
                onEvent?(.linkChanged(id, link))
            } else {
                linkProcedures.closed(handle)
                _ = linkProcedures.opened(handle, LinkParameters())
            }
        }
        // The monitor has not reported this connection yet: it ended advertising all the same.
        if endedAdvertising { advertisingEndedByConnection() }
        bearer.start(
            on: eventLoop,
            onPDU: { [weak self] pdu in self?.received(pdu, on: id, from: socket) },
            onClose: { [weak self] reason in self?.socketClosed(id, socket: socket, reason: reason) })
        onEvent?(.readyToSend(.fixed(id)))
    }

    private func received(_ pdu: [UInt8], on id: ConnectionID, from socket: KernelSocketID) {
        guard let link = links.link(id, socket: socket) else { return }
        logger.trace("\(id) < \(pdu.hexString)")
        capture?.writeATT(pdu, handle: link.handle ?? id.rawValue, direction: .received)
        // The kernel's SMP may have encrypted the link since the last PDU (the central paired
        // after Insufficient Encryption): the core must know before it checks permissions.
        refreshSecurity(id, socket: socket)
        onEvent?(.received(.fixed(id), pdu))
    }

    /// `refreshSecurity(_:socket:)` for a connection's fixed bearer (a PDU on another bearer
    /// of the link).
    func refreshSecurity(of id: ConnectionID) {
        guard let link = links[id] else { return }
        refreshSecurity(id, socket: link.socket)
    }

    /// Reads the socket's level (BT_SECURITY) and reports it when it moved; true if it did.
    @discardableResult
    private func refreshSecurity(_ id: ConnectionID, socket: KernelSocketID) -> Bool {
        guard links.link(id, socket: socket) != nil, let bearer = attSockets[socket],
            let level = (try? bearer.securityLevel())?.level, links.securityRead(id, socket: socket, level: level)
        else { return false }
        onEvent?(.securityChanged(id, level))
        return true
    }

    /// Encryption Change or Key Refresh Complete on `handle`, seen by the adapter monitor: the
    /// link's level is read now rather than at the central's next PDU, so a bonded central
    /// that only listens gets its subscriptions back and a Service Changed it is owed. The
    /// raw socket gets the event just before the kernel processes it (and updates the ATT
    /// socket's level), so an unchanged level is read again a few times, 20 ms apart.
    func encryptionEvent(status: UInt8, handle: UInt16) {
        for (id, link) in links.links(onHandle: handle) {
            checkSecurity(id, socket: link.socket, attemptsLeft: status == 0 ? 10 : 0)
        }
    }

    private func checkSecurity(_ id: ConnectionID, socket: KernelSocketID, attemptsLeft: Int) {
        guard !refreshSecurity(id, socket: socket), attemptsLeft > 0, links.link(id, socket: socket) != nil else { return }
        eventLoop.scheduleTask(in: .milliseconds(20)) { [weak self] in
            self?.checkSecurity(id, socket: socket, attemptsLeft: attemptsLeft - 1)
        }
    }

    private func socketClosed(_ id: ConnectionID, socket: KernelSocketID, reason: KernelATTBearer.CloseReason) {
        guard let link = links.closed(id, socket: socket) else { return }
        prompts.ended(id)
        attSockets.removeValue(forKey: socket)?.close()
        closeEnhancedBearers(of: id)
        var why: String?
        if case .error(let code) = reason { why = "read error \(code)" }
        reportDisconnection(id, link, why: why)
    }

    /// Reports the disconnection once its HCI reason is known, or after a short wait for it.
    private func reportDisconnection(_ id: ConnectionID, _ link: KernelLink, why: String?, waited: Bool = false) {
        switch links.disconnection(of: id, link, why: why, waited: waited) {
        case .wait:
            eventLoop.scheduleTask(in: .milliseconds(100)) { self.reportDisconnection(id, link, why: why, waited: true) }
        case .report(let reason, let detail):
            onEvent?(.disconnected(id, reason: reason, detail: detail))
        }
    }

    /// Closes the sockets of every link (the adapter went, or gattd stops), in order; the
    /// links are returned for reporting.
    @discardableResult
    func closeLinks() -> [(ConnectionID, KernelLink)] {
        let gone = links.removeAll()
        for (_, link) in gone { attSockets.removeValue(forKey: link.socket)?.close() }
        return gone
    }

    /// Sends the PDU on the bearer's socket (the link's ATT socket, or the Enhanced ATT
    /// channel's), or keeps it until the socket has room (an Enhanced ATT channel waits for
    /// the central's credits); `.readyToSend` follows once it is out (backpressure: the rest
    /// waits in the core's queues).
    public func send(_ pdu: [UInt8], on id: BearerID) {
        guard let socket = socket(of: id) else { return }
        if !id.isEnhanced, let link = links[id.connection] {
            capture?.writeATT(pdu, handle: link.handle ?? id.connection.rawValue, direction: .sent)
        }
        do {
            guard try socket.trySend(pdu) else {
                setUnsent(pdu, on: id)
                socket.whenWritable(on: eventLoop) { [weak self] in self?.writable(id, socket: socket) }
                return
            }
        } catch {
            // The link or channel is going: the socket's onClose cleans up.
            logger.debug("\(id): \(error)")
            return
        }
        logger.trace("\(id) > \(pdu.hexString)")
        onEvent?(.readyToSend(id))
    }

    private func writable(_ id: BearerID, socket: KernelATTBearer) {
        guard self.socket(of: id) === socket, let pdu = unsent(on: id) else { return }
        setUnsent(nil, on: id)
        send(pdu, on: id)
    }

    /// A bearer's socket: its link's for the unenhanced bearer, its channel's for an Enhanced one.
    private func socket(of id: BearerID) -> KernelATTBearer? {
        id.isEnhanced ? enhancedATT.bearers[id]?.bearer : links[id.connection].flatMap { attSockets[$0.socket] }
    }

    /// The PDU a bearer's socket had no room for.
    private func unsent(on id: BearerID) -> [UInt8]? {
        id.isEnhanced ? enhancedATT.bearers[id]?.unsent : links[id.connection]?.unsent
    }

    private func setUnsent(_ pdu: [UInt8]?, on id: BearerID) {
        if id.isEnhanced { enhancedATT.bearers[id]?.unsent = pdu } else { links.setUnsent(pdu, on: id.connection) }
    }

    /// HCI Disconnect on the central's link; the bearer's ECONNRESET then reports it.
    public func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Never] {
        guard let link = links[id] else { return [] }
        guard let handle = link.handle, let controller else {
            attSockets[link.socket]?.close()
            return []
        }
        let logger = self.logger
        commandThread.submit { _ in
            do {
                _ = try controller.send(.disconnect(handle: handle, reason: reason))
            } catch {
                logger.warning("cannot disconnect \(link.peer.address): \(error)")
            }
        }
        return []
    }

    /// Raises the socket's BT_SECURITY, so the kernel sends an SMP Security Request and the
    /// central pairs or re-encrypts before it retries (as iOS does).
    public func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Never] {
        guard let link = links[id], let bearer = attSockets[link.socket] else { return [] }
        let what = reason == .insufficientAuthentication ? "Insufficient Authentication" : "Insufficient Encryption"
        do {
            try bearer.requestSecurity(level)
            logger.info("\(id): \(what); asked \(link.peer.address) to pair (SMP Security Request)")
        } catch {
            logger.warning(
                "\(id): \(what), and \(error). If \(adapterName) was powered on before any mgmt client touched it, power-cycle it (btmgmt -i \(adapterName) power off; gattd powers it on again)"
            )
        }
        return []
    }

    /// Each PDU is written as it comes: nothing to flush.
    public func flush(now: Duration) -> [Never] { [] }
}
