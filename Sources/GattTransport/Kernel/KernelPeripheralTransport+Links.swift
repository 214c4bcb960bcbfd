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
        let chosen = freeConnectionID(handle: handle)
        let security = (try? bearer.securityLevel())?.level ?? .low
        let id = chosen
        links[id] = KernelLink(bearer: bearer, handle: handle, security: security)
        let peer = TransportPeer(address: bearer.peer.address, addressType: bearer.peer.type.hciAddressType, handle: handle, security: security)
        onEvent?(.connected(id, peer))
        if let handle, peripheralHandles.insert(handle).inserted {
            // The monitor has not reported this connection yet: it ended advertising all the same.
            advertisingEndedByConnection()
        }
        bearer.start(
            on: eventLoop,
            onPDU: { [weak self] pdu in self?.received(pdu, on: id, from: bearer) },
            onClose: { [weak self] reason in self?.bearerClosed(id, bearer: bearer, reason: reason) })
        onEvent?(.readyToSend(id))
    }

    /// The link's handle as its id when no link has it (nor waits for its disconnection to be
    /// reported), else the next spare id.
    func freeConnectionID(handle: UInt16?) -> ConnectionID {
        if let handle, links[ConnectionID(handle)] == nil, !disconnecting.contains(ConnectionID(handle)) {
            return ConnectionID(handle)
        }
        var chosen: ConnectionID
        repeat {
            chosen = ConnectionID(spareConnectionID)
            spareConnectionID = spareConnectionID == .max ? 0x1000 : spareConnectionID + 1
        } while links[chosen] != nil || disconnecting.contains(chosen)
        return chosen
    }

    private func received(_ pdu: [UInt8], on id: ConnectionID, from bearer: KernelATTBearer) {
        guard let link = links[id], link.bearer === bearer else { return }
        logger.trace("\(id) < \(pdu.hexString)")
        capture?.writeATT(pdu, handle: link.handle ?? id.rawValue, direction: .received)
        // The kernel's SMP may have encrypted the link since the last PDU (the central paired
        // after Insufficient Encryption): the core must know before it checks permissions.
        refreshSecurity(id, bearer: bearer)
        onEvent?(.received(id, pdu))
    }

    /// `refreshSecurity(_:bearer:)` for a connection's fixed bearer (a PDU on another bearer
    /// of the link).
    func refreshSecurity(of id: ConnectionID) {
        guard let link = links[id] else { return }
        refreshSecurity(id, bearer: link.bearer)
    }

    /// Reads the socket's level (BT_SECURITY) and reports it when it moved; true if it did.
    @discardableResult
    private func refreshSecurity(_ id: ConnectionID, bearer: KernelATTBearer) -> Bool {
        guard let link = links[id], link.bearer === bearer,
            let level = (try? bearer.securityLevel())?.level, level != link.security
        else { return false }
        links[id]?.security = level
        onEvent?(.securityChanged(id, level))
        return true
    }

    /// Encryption Change or Key Refresh Complete on `handle`, seen by the adapter monitor: the
    /// link's level is read now rather than at the central's next PDU, so a bonded central
    /// that only listens gets its subscriptions back and a Service Changed it is owed. The
    /// raw socket gets the event just before the kernel processes it (and updates the ATT
    /// socket's level), so an unchanged level is read again a few times, 20 ms apart.
    func encryptionEvent(status: UInt8, handle: UInt16) {
        for (id, link) in links.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where link.handle == handle {
            checkSecurity(id, bearer: link.bearer, attemptsLeft: status == 0 ? 10 : 0)
        }
    }

    private func checkSecurity(_ id: ConnectionID, bearer: KernelATTBearer, attemptsLeft: Int) {
        guard !refreshSecurity(id, bearer: bearer), attemptsLeft > 0, links[id]?.bearer === bearer else { return }
        eventLoop.scheduleTask(in: .milliseconds(20)) { [weak self] in
            self?.checkSecurity(id, bearer: bearer, attemptsLeft: attemptsLeft - 1)
        }
    }

    private func bearerClosed(_ id: ConnectionID, bearer: KernelATTBearer, reason: KernelATTBearer.CloseReason) {
        guard let link = links[id], link.bearer === bearer else { return }
        links[id] = nil
        pendingPrompts[id] = nil
        bearer.close()
        closeEnhancedBearers(of: id)
        if let handle = link.handle { peripheralHandles.remove(handle) }
        var why: String?
        if case .error(let code) = reason { why = "read error \(code)" }
        reportDisconnection(id, link, why: why)
    }

    /// The HCI reason comes from the adapter monitor's Disconnection Complete, which may
    /// arrive just after the socket's ECONNRESET: wait briefly for it.
    private func reportDisconnection(_ id: ConnectionID, _ link: KernelLink, why: String?, waited: Bool = false) {
        let known = link.handle.flatMap { disconnectReasons.removeValue(forKey: $0) }.map { HCIStatus($0) }
        if known == nil, !waited {
            // Until it is reported, the id stays taken: a new link on the same handle gets another.
            disconnecting.insert(id)
            eventLoop.scheduleTask(in: .milliseconds(100)) { self.reportDisconnection(id, link, why: why, waited: true) }
            return
        }
        disconnecting.remove(id)
        onEvent?(.disconnected(id, reason: known ?? .connectionTimeout, detail: known == nil ? why ?? "unknown" : nil))
    }

    /// Sends the PDU, or keeps it until the socket has room; `.readyToSend` follows once it
    /// is out (backpressure: the rest waits in the core's queues).
    public func send(_ pdu: [UInt8], on id: ConnectionID) {
        guard var link = links[id] else { return }
        capture?.writeATT(pdu, handle: link.handle ?? id.rawValue, direction: .sent)
        do {
            guard try link.bearer.trySend(pdu) else {
                link.unsent = pdu
                links[id] = link
                let bearer = link.bearer
                bearer.whenWritable(on: eventLoop) { [weak self] in self?.writable(id, bearer: bearer) }
                return
            }
        } catch {
            // The link is going: the bearer's onClose cleans up.
            logger.debug("\(id): \(error)")
            return
        }
        logger.trace("\(id) > \(pdu.hexString)")
        onEvent?(.readyToSend(id))
    }

    private func writable(_ id: ConnectionID, bearer: KernelATTBearer) {
        guard let link = links[id], link.bearer === bearer, let pdu = link.unsent else { return }
        links[id]?.unsent = nil
        send(pdu, on: id)
    }

    /// HCI Disconnect on the central's link; the bearer's ECONNRESET then reports it.
    public func disconnect(_ id: ConnectionID, reason: HCIStatus) {
        guard let link = links[id] else { return }
        guard let handle = link.handle, let controller else {
            link.bearer.close()
            return
        }
        let logger = self.logger
        commandThread.submit { _ in
            do {
                _ = try controller.send(.disconnect(handle: handle, reason: reason))
            } catch {
                logger.warning("cannot disconnect \(link.bearer.peer.address): \(error)")
            }
        }
    }

    /// Raises the socket's BT_SECURITY, so the kernel sends an SMP Security Request and the
    /// central pairs or re-encrypts before it retries (as iOS does).
    public func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError) {
        guard let link = links[id] else { return }
        let what = reason == .insufficientAuthentication ? "Insufficient Authentication" : "Insufficient Encryption"
        do {
            try link.bearer.requestSecurity(level)
            logger.info("\(id): \(what); asked \(link.bearer.peer.address) to pair (SMP Security Request)")
        } catch {
            logger.warning(
                "\(id): \(what), and \(error). If \(adapterName) was powered on before any mgmt client touched it, power-cycle it (btmgmt -i \(adapterName) power off; gattd powers it on again)"
            )
        }
    }

    /// Each PDU is written as it comes: nothing to flush.
    public func flush() {}
}

/// One connected central on the kernel transport.
struct KernelLink {
    let bearer: KernelATTBearer
    /// The LE connection handle (for HCI Disconnect), when the kernel told it.
    let handle: UInt16?
    var security: SecurityLevel
    /// A PDU the socket had no room for: sent once it is writable.
    var unsent: [UInt8]?
}
