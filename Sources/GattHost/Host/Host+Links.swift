import GattCore

// LE connections, ACL data and the L2CAP fixed channels (Core Spec Vol 3 Part A).
extension Host {
    mutating func connectionOpened(_ c: LEConnectionComplete) -> [HostOutput] {
        guard c.status != .success || c.role == .peripheral else {
            // We never initiate: this says nothing about our advertising.
            return [.event(.warning("unexpected connection as central (handle \(c.handle)); ignored"))]
        }
        guard c.status == .success else {
            // A failed attempt (e.g. directed advertising timeout) ends legacy advertising.
            var out: [HostOutput] = [.event(.warning("connection attempt failed: \(c.status)"))]
            advertisingEnded(by: c, into: &out)
            return out + pumpCommands()
        }
        guard let conn = linkTable.open(c) else {
            // Re-initialising the handle would forget packets in flight (credits) and partial frames.
            return [.event(.warning("LE Connection Complete for connection handle \(c.handle), which is already connected; ignored"))]
        }
        let link = LinkParameters.atConnection(connectionInterval: c.connectionInterval, peripheralLatency: c.peripheralLatency, supervisionTimeout: c.supervisionTimeout)
        _ = linkProcedures.opened(c.handle, link)
        acl.open(c.handle)
        openSecurity(c)
        let peer = TransportPeer(address: c.peerAddress, addressType: c.peerAddressType, handle: c.handle)
        var out: [HostOutput] = [.event(.transport(.connected(conn.id, peer))), .event(.transport(.linkChanged(conn.id, link)))]
        // A connection ends legacy advertising, or the extended set it came from (Vol 6 Part B §4.4.2).
        advertisingEnded(by: c, into: &out)
        if configuration.requestDataLengthAndPHY {
            let dle = HCICommand.leSetDataLength(handle: c.handle, txOctets: 251, txTime: 2120)
            if controller.leFeatures.contains(.dataPacketLengthExtension), supports(dle) { commands.append(dle) }
            if let phy = preferredPHYRequest(c.handle), supports(phy) { commands.append(phy) }
        }
        if let preferred = configuration.advertising.preferredConnection {
            acl.queue(frame: preferred.updateRequest(identifier: signalling.next()).frame, on: c.handle)
        }
        out += pumpCommands()
        out += pumpACL()
        return out
    }

    /// A connection (or a failed attempt) ended legacy advertising or an extended set: the
    /// sets it ended, and the next legacy turn's commands.
    private mutating func advertisingEnded(by c: LEConnectionComplete, into out: inout [HostOutput]) {
        let (events, next) = advertising.connectionOpened(c)
        out += events.map { .event(.transport($0)) }
        if let next { commands.append(contentsOf: next) }
    }

    mutating func connectionClosed(_ handle: UInt16, reason: HCIStatus) -> [HostOutput] {
        guard let conn = linkTable.close(handle) else { return [] }
        acl.close(handle)
        security.close(handle)
        linkProcedures.closed(handle)
        return channels.linkClosed(handle) + [.event(.transport(.disconnected(conn.id, reason: reason)))] + pumpACL()
    }

    mutating func handle(_ packet: HCIACLPacket) -> [HostOutput] {
        guard let outputs = linkTable.reassemble(packet) else {
            return [.event(.warning("ACL data for unknown connection handle \(packet.handle) dropped"))]
        }
        var out: [HostOutput] = []
        for o in outputs {
            switch o {
            case .error(let e): out += linkTable.warnings.warning("connection \(packet.handle): \(e)", handle: packet.handle)
            case .frame(let f) where f.channelID == .att: out.append(.event(.transport(.received(.fixed(ConnectionID(packet.handle)), f.payload))))
            case .frame(let f): out += handle(frame: f, handle: packet.handle)
            }
        }
        pumpACL(into: &out)
        return out
    }

    private mutating func handle(frame: L2CAPBasicFrame, handle: UInt16) -> [HostOutput] {
        switch frame.channelID {
        case .att:
            return [.event(.transport(.received(.fixed(ConnectionID(handle)), frame.payload)))]
        case .leSignalling:
            return handleSignalling(frame.payload, handle: handle)
        case .smp:
            return security.receive(frame.payload, handle: handle, now: now, acl: &acl)
        case _ where CreditBasedChannels.dynamicCIDs.contains(frame.channelID.rawValue):
            if let out = channels.receiveKFrame(frame, handle: handle, now: now, acl: &acl, identifiers: &signalling) { return out }
            return linkTable.warnings.warning("connection \(handle): K-frame for \(frame.channelID), which is not open, dropped", handle: handle)
        default:
            return linkTable.warnings.warning("connection \(handle): L2CAP frame for unsupported CID \(frame.channelID) dropped", handle: handle)
        }
    }

    /// LE signalling (Vol 3 Part A §4): the peripheral's answers.
    private mutating func handleSignalling(_ payload: [UInt8], handle: UInt16) -> [HostOutput] {
        let pdu: LESignallingPDU
        do {
            pdu = try LESignallingPDU(decoding: payload)
        } catch {
            // Without a decodable identifier there is nothing to reject (§4: silently discard).
            guard payload.count >= 2 else { return linkTable.warnings.warning("connection \(handle): malformed LE signalling frame dropped", handle: handle) }
            acl.queue(frame: LESignallingPDU.commandNotUnderstood(identifier: payload[1]).frame, on: handle)
            return linkTable.warnings.warning("connection \(handle): malformed LE signalling command rejected: \(error)", handle: handle)
        }
        if case .connectionParameterUpdateResponse(let result) = pdu.command,
            let steps = linkProcedures.updateResponse(pdu.identifier, result: result, handle: handle)
        {
            return apply(steps)
        }
        if case .commandReject = pdu.command, let steps = linkProcedures.commandRejected(pdu.identifier, handle: handle) { return apply(steps) }
        if case .connectionParameterUpdateResponse(let result) = pdu.command, result != 0 {
            return [.event(.warning("connection \(handle): the central rejected the preferred connection parameters"))]
        }
        if let out = handleChannelSignalling(pdu, handle: handle) { return out }
        if let response = LESignallingPDU.peripheralResponse(to: pdu) {
            acl.queue(frame: response.frame, on: handle)
        }
        return []
    }

    /// Sends what the controller has buffers for and invites the core to send ATT PDUs
    /// on connections that drained.
    mutating func pumpACL() -> [HostOutput] {
        var out: [HostOutput] = []
        pumpACL(into: &out)
        return out
    }

    /// `pumpACL()`, appended to `out`.
    mutating func pumpACL(into out: inout [HostOutput]) {
        guard !hasFailed else { return }
        let start = out.count
        acl.pump(into: &out)
        channels.routeEnhancedATTReadiness(&out, from: start)
    }
}
