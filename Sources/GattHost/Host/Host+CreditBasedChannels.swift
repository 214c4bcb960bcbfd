import GattCore

// Credit-based L2CAP channels, server role (Core Spec Vol 3 Part A §3.4, §4.22–§4.28,
// §10.1): the LE signalling exchanges that open, credit, reconfigure and close them, and
// their SDUs in and out. The layer above (the H4 transport) sees `.channel` events and
// calls `send(sdu:on:)`, `consumed(on:)` and `close(_:)`.

/// What a credit-based channel tells the layer above (`HostEvent.channel`).
public enum CreditBasedChannelEvent: Sendable, Equatable {
    /// A central opened a channel to `server` (`L2CAPChannelServer.id`). `peerMTU`: the
    /// largest SDU it takes; `mtu`: the largest we take.
    case opened(CreditBasedChannelID, server: String, psm: UInt16, peerMTU: Int, mtu: Int)
    /// A whole SDU from the central; its credits go back once `consumed(on:)` says so.
    case received(CreditBasedChannelID, [UInt8])
    /// The channel may take one more SDU (`send(sdu:on:)`): the last one left, the central gave credits.
    case ready(CreditBasedChannelID)
    /// The central disconnected the channel, broke its rules, or the link dropped.
    case closed(CreditBasedChannelID, reason: String)
}

extension Host {
    /// Dynamic CIDs on LE (Vol 3 Part A §2.1).
    static let dynamicCIDs: ClosedRange<UInt16> = 0x0040...0x007F
    /// Encryption keys shorter than this refuse secured channels (as Linux does: 7 octets).
    static let minimumChannelKeySize = 7

    /// Accept credit-based channels to exactly these servers from now on (others are refused,
    /// LE_PSM not supported); channels already open stay open.
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) { channelServers = servers }

    /// One SDU for the central (after `.ready` named the channel). Longer than the central's MTU: dropped, with a warning.
    public mutating func send(sdu: [UInt8], on id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        guard let ch = channels[id] else { return [] }
        guard sdu.count <= ch.peer.mtu else {
            return [.event(.warning("\(id): SDU of \(sdu.count) bytes exceeds the central's MTU \(ch.peer.mtu); dropped"))]
        }
        acl.queue(kFrames: CreditBasedChannel.segment(sdu, mps: ch.peer.mps), cid: id.cid, on: id.connection.rawValue)
        return pumpACL()
    }

    /// The layer above took the oldest SDU received on `id`: its credits go back to the central.
    public mutating func consumed(on id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        guard let credits = channels[id]?.consumed(), credits > 0 else { return [] }
        let pdu = LESignallingPDU(identifier: nextSignallingIdentifier(), command: .flowControlCreditIndication(cid: id.cid, credits: UInt16(credits)))
        acl.queue(frame: pdu.frame, on: id.connection.rawValue)
        return pumpACL()
    }

    /// From now on `.ready` names the channel as soon as its SDUs have left, even while the
    /// central gives no credits: for a program that left, whose last SDU must go before the
    /// channel closes (a `.ready` without credits takes no SDU: there is none).
    public mutating func readyWhenSent(_ id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        guard channels[id] != nil else { return [] }
        acl.inviteWhenSent(id.cid, on: id.connection.rawValue)
        return pumpACL()
    }

    /// Disconnects a channel (Disconnection Request, §4.6); no `.closed` follows.
    public mutating func close(_ id: CreditBasedChannelID, now: Duration) -> [HostOutput] {
        self.now = now
        disconnectChannel(id)
        return pumpACL()
    }

    /// The channels open on the links.
    public var creditBasedChannels: [CreditBasedChannelID: CreditBasedChannel] { channels }

    mutating func nextSignallingIdentifier() -> UInt8 {
        signallingIdentifier = signallingIdentifier == 255 ? 1 : signallingIdentifier + 1
        return signallingIdentifier
    }

    private mutating func disconnectChannel(_ id: CreditBasedChannelID) {
        guard let ch = channels.removeValue(forKey: id) else { return }
        eattBearers.remove(id)
        acl.closeChannel(id.cid, on: id.connection.rawValue)
        disconnecting[id] = PendingDisconnection(peerCID: ch.peer.cid, deadline: now + PendingDisconnection.rtx)
        let pdu = LESignallingPDU(identifier: nextSignallingIdentifier(), command: .disconnectionRequest(destinationCID: ch.peer.cid, sourceCID: id.cid))
        acl.queue(frame: pdu.frame, on: id.connection.rawValue)
    }

    /// Disconnection Requests the central did not answer within the RTX timer: their CIDs
    /// are free again (the channels are gone for everyone above already).
    mutating func expireDisconnections(now: Duration) -> [HostOutput] {
        guard !disconnecting.isEmpty else { return [] }
        let expired = disconnecting.filter { $0.value.deadline <= now }.keys.sorted { ($0.connection.rawValue, $0.cid) < ($1.connection.rawValue, $1.cid) }
        for id in expired { disconnecting[id] = nil }
        return expired.map { .event(.warning("\($0): no Disconnection Response within \(PendingDisconnection.rtx); its CID is free again")) }
    }

    /// The link dropped: every channel of it closes.
    mutating func closeChannels(of handle: UInt16) -> [HostOutput] {
        for id in disconnecting.keys where id.connection.rawValue == handle { disconnecting[id] = nil }
        let closing = channels.keys.filter { $0.connection.rawValue == handle }.sorted { $0.cid < $1.cid }
        for id in closing { channels[id] = nil }
        return closing.map { channelEvent(.closed($0, reason: "the link dropped")) }
    }

    /// A K-frame on a dynamic CID; nil when no channel (open or closing) has that CID.
    mutating func receiveKFrame(_ frame: L2CAPBasicFrame, handle: UInt16) -> [HostOutput]? {
        let id = CreditBasedChannelID(connection: ConnectionID(handle), cid: frame.channelID.rawValue)
        guard channels[id] != nil else { return disconnecting[id] != nil ? [] : nil }
        switch channels[id]!.receive(kFrame: frame.payload) {
        case .partial: return []
        case .sdu(let sdu): return receivedSDU(sdu, on: id)
        case .violation(let v): return violated(id, v)
        }
    }

    /// The central broke the channel's rules: disconnected (§3.4.3, §4.24).
    private mutating func violated(_ id: CreditBasedChannelID, _ v: CreditBasedViolation) -> [HostOutput] {
        // The event first: an Enhanced ATT bearer's closes the core's bearer only while
        // `eattBearers` still names it (disconnecting forgets it).
        let closed = channelEvent(.closed(id, reason: "\(v)"))
        disconnectChannel(id)
        return [.event(.warning("\(id): \(v); channel disconnected")), closed]
    }

    /// The signalling commands of credit-based channels; nil for the others.
    mutating func handleChannelSignalling(_ pdu: LESignallingPDU, handle: UInt16) -> [HostOutput]? {
        let link = ConnectionID(handle)
        switch pdu.command {
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            let (response, out) = leConnectionRequested(psm: psm, scid: scid, mtu: mtu, mps: mps, credits: credits, handle: handle)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: response).frame, on: handle)
            guard case .leCreditBasedConnectionResponse(_, _, _, _, let result) = response, result != .successful else { return out }
            return out + peerWarning("connection \(handle): L2CAP channel to PSM \(psm) refused: \(result)", handle: handle)
        case .creditBasedConnectionRequest(let spsm, let mtu, let mps, let credits, let scids):
            let (response, out) = enhancedConnectionRequested(spsm: spsm, mtu: mtu, mps: mps, credits: credits, scids: scids, handle: handle)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: response).frame, on: handle)
            guard case .creditBasedConnectionResponse(_, _, _, let result, _) = response, result != .successful else { return out }
            return out + peerWarning(
                "connection \(handle): \(scids.count) L2CAP channel(s) to PSM \(spsm) asked, some or all refused: \(result)", handle: handle)
        case .creditBasedReconfigureRequest(let mtu, let mps, let cids):
            let result = reconfigure(mtu: Int(mtu), mps: Int(mps), peerCIDs: cids, handle: handle)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: .creditBasedReconfigureResponse(result: result)).frame, on: handle)
            return result == .successful ? reconfiguredBearers(peerCIDs: cids, handle: handle) : []
        case .flowControlCreditIndication(let cid, let credits):
            // The CID is the sender's (§4.24): our channel's peer CID.
            guard let id = channel(peerCID: cid, handle: handle) else { return [] }
            switch acl.addCredits(Int(credits), to: id.cid, on: handle) {
            case .failure(let v): return violated(id, v)
            case .success, nil: return []
            }
        case .disconnectionRequest(let dcid, let scid):
            let id = CreditBasedChannelID(connection: link, cid: dcid)
            let peer = channels[id]?.peer.cid ?? disconnecting[id]?.peerCID
            guard peer == scid else { return nil }  // Command Reject, invalid CID (`peripheralResponse`)
            let wasOpen = channels.removeValue(forKey: id) != nil
            disconnecting[id] = nil
            acl.closeChannel(dcid, on: handle)
            let response = LESignallingPDU(identifier: pdu.identifier, command: .disconnectionResponse(destinationCID: dcid, sourceCID: scid))
            acl.queue(frame: response.frame, on: handle)
            return wasOpen ? [channelEvent(.closed(id, reason: "the central disconnected it"))] : []
        case .disconnectionResponse(_, let scid):
            disconnecting[CreditBasedChannelID(connection: link, cid: scid)] = nil
            return []
        default:
            return nil
        }
    }

    private func channel(peerCID: UInt16, handle: UInt16) -> CreditBasedChannelID? {
        channels.first { $0.key.connection.rawValue == handle && $0.value.peer.cid == peerCID }?.key
    }

    /// The server that takes channels to `psm`: an app's, or Enhanced ATT (0x0027, only with
    /// an Enhanced Credit Based Connection Request, `enhanced`, and only while it is on).
    private func channelServer(for psm: UInt16, enhanced: Bool) -> L2CAPChannelServer? {
        guard psm != Self.eattPSM else { return enhanced && enhancedATT ? Self.eattServer : nil }
        return channelServers.first { $0.psm == psm }
    }

    /// Why the link is not secure enough for `required`, as a connection result (§4.23).
    /// Unencrypted: Insufficient Encryption when we hold a bond for the central (it only
    /// has to encrypt with its key), else Insufficient Authentication (it must pair first) —
    /// Zephyr's reading; a key shorter than 7 octets: Encryption Key Size Too Short;
    /// unauthenticated keys for `.authentication`: Insufficient Authentication.
    func securityRefusal(_ required: L2CAPChannelSecurity, handle: UInt16) -> LECreditBasedConnectionResult? {
        guard required != .none, let c = connections[handle] else { return nil }
        guard c.security.isEncrypted else {
            return bonds.bond(for: c.peerAddress) != nil ? .insufficientEncryption : .insufficientAuthentication
        }
        if let size = c.keySize, size < Self.minimumChannelKeySize { return .encryptionKeySizeTooShort }
        if required == .authentication, !c.security.isAuthenticated { return .insufficientAuthentication }
        return nil
    }

    /// Why a source CID the central names cannot be taken (§4.23), else nil.
    private func sourceCIDRefusal(_ scid: UInt16, handle: UInt16, taken: [UInt16]) -> LECreditBasedConnectionResult? {
        guard Self.dynamicCIDs.contains(scid) else { return .invalidSourceCID }
        if taken.contains(scid) || channel(peerCID: scid, handle: handle) != nil { return .sourceCIDAlreadyAllocated }
        return nil
    }

    /// Our lowest free dynamic CID on the link (not open, not closing, not `taken`).
    private func freeCID(handle: UInt16, taken: [UInt16]) -> UInt16? {
        Self.dynamicCIDs.first { cid in
            let id = CreditBasedChannelID(connection: ConnectionID(handle), cid: cid)
            return channels[id] == nil && disconnecting[id] == nil && !taken.contains(cid)
        }
    }

    /// Opens the channel (the response is the caller's).
    private mutating func openChannel(_ ch: CreditBasedChannel, peerCredits: UInt16) -> HostOutput {
        channels[ch.id] = ch
        acl.openChannel(ch.id.cid, peerCID: ch.peer.cid, credits: Int(peerCredits), on: ch.id.connection.rawValue)
        if ch.psm == Self.eattPSM { eattBearers.insert(ch.id) }
        return channelEvent(.opened(ch.id, server: ch.server, psm: ch.psm, peerMTU: ch.peer.mtu, mtu: ch.local.mtu))
    }

    /// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ (§4.22): checked as Linux and Zephyr do —
    /// parameters, LE_PSM, security, source CID, then our resources.
    private mutating func leConnectionRequested(
        psm: UInt16, scid: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, handle: UInt16
    ) -> (LESignallingCommand, [HostOutput]) {
        func refuse(_ r: LECreditBasedConnectionResult) -> (LESignallingCommand, [HostOutput]) {
            (.leCreditBasedConnectionResponse(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: r), [])
        }
        guard mtu >= 23, (23...65533).contains(mps) else { return refuse(.unacceptableParameters) }
        guard let server = channelServer(for: psm, enhanced: false) else { return refuse(.lePSMNotSupported) }
        if let r = securityRefusal(server.security, handle: handle) { return refuse(r) }
        if let r = sourceCIDRefusal(scid, handle: handle, taken: []) { return refuse(r) }
        guard let cid = freeCID(handle: handle, taken: []) else { return refuse(.noResourcesAvailable) }
        let ours = CreditBasedEndpoint(cid: cid, mtu: server.mtu, mps: CreditBasedChannel.mps(forMTU: server.mtu, minimum: 23))
        let given = CreditBasedChannel.initialCredits(mtu: ours.mtu, mps: ours.mps)
        let ch = CreditBasedChannel(
            id: CreditBasedChannelID(connection: ConnectionID(handle), cid: cid), mode: .leCreditBased, psm: psm, server: server.id,
            local: ours, peer: CreditBasedEndpoint(cid: scid, mtu: Int(mtu), mps: Int(mps)), initialCredits: given)
        let response = LESignallingCommand.leCreditBasedConnectionResponse(
            destinationCID: cid, mtu: UInt16(ours.mtu), mps: UInt16(ours.mps), initialCredits: UInt16(given), result: .successful)
        return (response, [openChannel(ch, peerCredits: credits)])
    }

    /// L2CAP_CREDIT_BASED_CONNECTION_REQ (§4.25, §4.26): all channels refused for the request
    /// as a whole (count, parameters, SPSM, security), else each source CID on its own
    /// ("some refused": the result names the last refusal, the CID is 0x0000).
    private mutating func enhancedConnectionRequested(
        spsm: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, scids: [UInt16], handle: UInt16
    ) -> (LESignallingCommand, [HostOutput]) {
        func refuse(_ r: LECreditBasedConnectionResult) -> (LESignallingCommand, [HostOutput]) {
            (.creditBasedConnectionResponse(mtu: 0, mps: 0, initialCredits: 0, result: r, destinationCIDs: scids.map { _ in 0 }), [])
        }
        let minimum = LESignallingCommand.minimumEnhancedMTU
        guard (1...LESignallingCommand.maximumEnhancedChannels).contains(scids.count) else { return refuse(.invalidParameters) }
        guard mtu >= minimum, mps >= minimum, mps <= 65533 else { return refuse(.unacceptableParameters) }
        guard let server = channelServer(for: spsm, enhanced: true) else { return refuse(.lePSMNotSupported) }
        if let r = securityRefusal(server.security, handle: handle) { return refuse(r) }
        let ourMTU = max(minimum, server.mtu)
        let ours = (mtu: ourMTU, mps: CreditBasedChannel.mps(forMTU: ourMTU, minimum: minimum))
        let given = CreditBasedChannel.initialCredits(mtu: ours.mtu, mps: ours.mps)
        var result = LECreditBasedConnectionResult.successful
        var dcids: [UInt16] = []
        var out: [HostOutput] = []
        var taken: [UInt16] = []
        for scid in scids {
            if let r = sourceCIDRefusal(scid, handle: handle, taken: taken) ?? (freeCID(handle: handle, taken: []) == nil ? .noResourcesAvailable : nil) {
                result = r
                dcids.append(0)
                continue
            }
            taken.append(scid)
            let cid = freeCID(handle: handle, taken: [])!
            dcids.append(cid)
            let ch = CreditBasedChannel(
                id: CreditBasedChannelID(connection: ConnectionID(handle), cid: cid), mode: .enhancedCreditBased, psm: spsm,
                server: server.id, local: CreditBasedEndpoint(cid: cid, mtu: ours.mtu, mps: ours.mps),
                peer: CreditBasedEndpoint(cid: scid, mtu: Int(mtu), mps: Int(mps)), initialCredits: given)
            out.append(openChannel(ch, peerCredits: credits))
        }
        let response = LESignallingCommand.creditBasedConnectionResponse(
            mtu: UInt16(ours.mtu), mps: UInt16(ours.mps), initialCredits: UInt16(given), result: result, destinationCIDs: dcids)
        return (response, out)
    }

    /// L2CAP_CREDIT_BASED_RECONFIGURE_REQ (§4.27): the central's new MTU and MPS for its
    /// channels (named by its CIDs) in Enhanced Credit Based mode.
    private mutating func reconfigure(mtu: Int, mps: Int, peerCIDs: [UInt16], handle: UInt16) -> CreditBasedReconfigureResult {
        let minimum = LESignallingCommand.minimumEnhancedMTU
        guard (1...LESignallingCommand.maximumEnhancedChannels).contains(peerCIDs.count), mtu >= minimum, mps >= minimum, mps <= 65533
        else { return .unacceptableParameters }
        var ids: [CreditBasedChannelID] = []
        for cid in peerCIDs {
            guard let id = channel(peerCID: cid, handle: handle), channels[id]?.mode == .enhancedCreditBased else { return .invalidDestinationCID }
            ids.append(id)
        }
        for id in ids {
            guard let peer = channels[id]?.peer else { continue }
            if mtu < peer.mtu { return .mtuReductionNotAllowed }
            if mps < peer.mps, ids.count > 1 { return .mpsReductionNotAllowed }
        }
        for id in ids {
            channels[id]?.peer.mtu = mtu
            channels[id]?.peer.mps = mps
        }
        return .successful
    }
}

/// A Disconnection Request of ours waiting for its response (Vol 3 Part A §4.6, §6.2.1).
struct PendingDisconnection: Sendable {
    /// The RTX timer of a signalling request: 1–60 s (§6.2.1); 2 s, as Zephyr.
    static let rtx: Duration = .seconds(2)
    let peerCID: UInt16
    let deadline: Duration
}
