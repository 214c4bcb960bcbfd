import GattCore

/// The credit-based L2CAP channels of every link, server role (Core Spec Vol 3 Part A §3.4,
/// §4.22–§4.28, §10.1): the LE signalling exchanges that open, credit, reconfigure and close
/// them, and their SDUs in and out. Those a central opens on PSM 0x0027 (only with Enhanced
/// ATT on, only on an encrypted link) are Enhanced ATT bearers of the core (Vol 3 Part F
/// §3.2.11), never sockets: their SDUs go up as `.received` with their credits returned at
/// once (the core consumes synchronously), readiness as `.readyToSend`, opening,
/// reconfiguration and closing as `.enhancedBearer`; the others go up as `.channel` events.
/// `Host` keeps the entry points; what goes out goes through the ACL scheduler it names.
struct CreditBasedChannels: Sendable {
    /// Dynamic CIDs on LE (Vol 3 Part A §2.1).
    static let dynamicCIDs: ClosedRange<UInt16> = 0x0040...0x007F
    /// Encryption keys shorter than this refuse secured channels (as Linux does: 7 octets).
    static let minimumChannelKeySize = 7
    /// The PSM of Enhanced ATT (Assigned Numbers, Vol 3 Part F §3.2.11).
    static let eattPSM: UInt16 = 0x0027
    /// Our MTU on Enhanced ATT channels: the largest ATT value (512) with its headers.
    static let eattMTU = 517
    /// Enhanced ATT as a channel server: encryption required (§3.2.11: EATT needs an encrypted
    /// link), so an unencrypted request gets Insufficient Authentication, or Insufficient
    /// Encryption from a bonded central (`securityRefusal`).
    static let eattServer = L2CAPChannelServer(id: "eatt", psm: eattPSM, security: .encryption, mtu: eattMTU)

    /// The servers credit-based channels are accepted for (`setL2CAPChannelServers`).
    var servers: [L2CAPChannelServer] = []
    /// Accept Enhanced ATT bearers (PSM 0x0027, `setEnhancedATT`).
    var enhancedATT = false
    /// The open credit-based channels of every link.
    private(set) var open: [CreditBasedChannelID: CreditBasedChannel] = [:]
    /// Channels we asked the central to disconnect, until its response or the RTX timer:
    /// the peer's CID and when the CID is freed without a response.
    private(set) var disconnecting: [CreditBasedChannelID: PendingDisconnection] = [:]
    /// The open channels that are Enhanced ATT bearers (never sockets: their events go to the core).
    private(set) var eattBearers: Set<CreditBasedChannelID> = []

    // MARK: - SDUs and credits

    /// Queues one SDU for the central; nil when queued, else what to report instead (no such
    /// channel: nothing; longer than the central's MTU: a warning).
    func queue(sdu: [UInt8], on id: CreditBasedChannelID, acl: inout ACLScheduler) -> [HostOutput]? {
        guard let ch = open[id] else { return [] }
        guard sdu.count <= ch.peer.mtu else {
            return [.event(.warning("\(id): SDU of \(sdu.count) bytes exceeds the central's MTU \(ch.peer.mtu); dropped"))]
        }
        acl.queue(kFrames: CreditBasedChannel.segment(sdu, mps: ch.peer.mps), cid: id.cid, on: id.connection.rawValue)
        return nil
    }

    /// One ATT PDU on an Enhanced ATT bearer's channel, segmented into K-frames; longer than
    /// its MTU (the core never makes one), or no such bearer: dropped.
    func queue(att pdu: [UInt8], on bearer: BearerID, acl: inout ACLScheduler) {
        let id = CreditBasedChannelID(bearer)
        guard eattBearers.contains(id), let ch = open[id], pdu.count <= ch.peer.mtu else { return }
        acl.queue(kFrames: CreditBasedChannel.segment(pdu, mps: ch.peer.mps), cid: id.cid, on: id.connection.rawValue)
    }

    /// The layer above took the oldest SDU received on `id`: its credits go back to the
    /// central (true when an indication was queued).
    mutating func consumed(on id: CreditBasedChannelID, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers) -> Bool {
        guard let credits = open[id]?.consumed(), credits > 0 else { return false }
        let pdu = LESignallingPDU(identifier: identifiers.next(), command: .flowControlCreditIndication(cid: id.cid, credits: UInt16(credits)))
        acl.queue(frame: pdu.frame, on: id.connection.rawValue)
        return true
    }

    /// From now on the scheduler invites `id` as soon as its SDUs have left (false: no such channel).
    func readyWhenSent(_ id: CreditBasedChannelID, acl: inout ACLScheduler) -> Bool {
        guard open[id] != nil else { return false }
        acl.inviteWhenSent(id.cid, on: id.connection.rawValue)
        return true
    }

    /// A K-frame on a dynamic CID; nil when no channel (open or closing) has that CID.
    mutating func receiveKFrame(
        _ frame: L2CAPBasicFrame, handle: UInt16, now: Duration, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers
    ) -> [HostOutput]? {
        let id = CreditBasedChannelID(connection: ConnectionID(handle), cid: frame.channelID.rawValue)
        guard open[id] != nil else { return disconnecting[id] != nil ? [] : nil }
        switch open[id]!.receive(kFrame: frame.payload) {
        case .partial: return []
        case .sdu(let sdu): return receivedSDU(sdu, on: id, acl: &acl, identifiers: &identifiers)
        case .violation(let v): return violated(id, v, now: now, acl: &acl, identifiers: &identifiers)
        }
    }

    /// A whole SDU: an app channel's goes up (credits when the program read it); an Enhanced
    /// ATT bearer's goes to the core, and its credits go back now.
    private mutating func receivedSDU(
        _ sdu: [UInt8], on id: CreditBasedChannelID, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers
    ) -> [HostOutput] {
        guard eattBearers.contains(id) else { return [.event(.channel(.received(id, sdu)))] }
        _ = consumed(on: id, acl: &acl, identifiers: &identifiers)
        return [event(.received(id, sdu))]
    }

    // MARK: - Closing

    /// Disconnects a channel (Disconnection Request, §4.6); no `.closed` follows.
    mutating func disconnect(_ id: CreditBasedChannelID, now: Duration, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers) {
        guard let ch = open.removeValue(forKey: id) else { return }
        eattBearers.remove(id)
        acl.closeChannel(id.cid, on: id.connection.rawValue)
        disconnecting[id] = PendingDisconnection(peerCID: ch.peer.cid, deadline: now + PendingDisconnection.rtx)
        let pdu = LESignallingPDU(identifier: identifiers.next(), command: .disconnectionRequest(destinationCID: ch.peer.cid, sourceCID: id.cid))
        acl.queue(frame: pdu.frame, on: id.connection.rawValue)
    }

    /// The central broke the channel's rules: disconnected (§3.4.3, §4.24).
    private mutating func violated(
        _ id: CreditBasedChannelID, _ v: CreditBasedViolation, now: Duration, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers
    ) -> [HostOutput] {
        // The event first: an Enhanced ATT bearer's closes the core's bearer only while
        // `eattBearers` still names it (disconnecting forgets it).
        let closed = event(.closed(id, reason: "\(v)"))
        disconnect(id, now: now, acl: &acl, identifiers: &identifiers)
        return [.event(.warning("\(id): \(v); channel disconnected")), closed]
    }

    /// When the earliest Disconnection Request runs out of time.
    var deadline: Duration? {
        var next: Duration?
        for p in disconnecting.values where next.map({ p.deadline < $0 }) ?? true { next = p.deadline }
        return next
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
    mutating func linkClosed(_ handle: UInt16) -> [HostOutput] {
        for id in disconnecting.keys where id.connection.rawValue == handle { disconnecting[id] = nil }
        let closing = open.keys.filter { $0.connection.rawValue == handle }.sorted { $0.cid < $1.cid }
        for id in closing { open[id] = nil }
        return closing.map { event(.closed($0, reason: "the link dropped")) }
    }

    // MARK: - Events up

    /// A channel event as the layer above hears it: an app channel's as `.channel`, an
    /// Enhanced ATT bearer's as the core's bearer events (a closed one is forgotten).
    private mutating func event(_ e: CreditBasedChannelEvent) -> HostOutput {
        switch e {
        case .opened(let id, _, _, let peerMTU, let mtu) where eattBearers.contains(id):
            return .event(.transport(.enhancedBearer(BearerID(id), .opened(mtu: min(peerMTU, mtu)))))
        case .received(let id, let sdu) where eattBearers.contains(id):
            return .event(.transport(.received(BearerID(id), sdu)))
        case .ready(let id) where eattBearers.contains(id):
            return .event(.transport(.readyToSend(BearerID(id))))
        case .closed(let id, _) where eattBearers.contains(id):
            eattBearers.remove(id)
            return .event(.transport(.enhancedBearer(BearerID(id), .closed)))
        default:
            return .event(.channel(e))
        }
    }

    /// The ACL scheduler invites channels with `.channel(.ready)`: an Enhanced ATT bearer's
    /// invitation is the core's `.readyToSend` (outputs from `start` on).
    func routeEnhancedATTReadiness(_ out: inout [HostOutput], from start: Int) {
        guard !eattBearers.isEmpty else { return }
        for i in start..<out.count {
            guard case .event(.channel(.ready(let id))) = out[i], eattBearers.contains(id) else { continue }
            out[i] = .event(.transport(.readyToSend(BearerID(id))))
        }
    }

    /// After a successful Credit Based Reconfigure: each Enhanced ATT bearer named gets its
    /// new ATT_MTU (the smaller of both MTUs; it only grows).
    private func reconfiguredBearers(peerCIDs: [UInt16], handle: UInt16) -> [HostOutput] {
        open.filter { $0.key.connection.rawValue == handle && peerCIDs.contains($0.value.peer.cid) && eattBearers.contains($0.key) }
            .sorted { $0.key.cid < $1.key.cid }
            .map { .event(.transport(.enhancedBearer(BearerID($0.key), .reconfigured(mtu: min($0.value.peer.mtu, $0.value.local.mtu))))) }
    }

    // MARK: - LE signalling

    /// The signalling commands of credit-based channels; nil for the others. `refusal`: why
    /// the link is not secure enough for a server's requirement (`securityRefusal`).
    mutating func handleSignalling(
        _ pdu: LESignallingPDU, handle: UInt16, now: Duration, acl: inout ACLScheduler, identifiers: inout SignallingIdentifiers,
        warnings: inout PeerWarnings, refusal: (L2CAPChannelSecurity) -> LECreditBasedConnectionResult?
    ) -> [HostOutput]? {
        let link = ConnectionID(handle)
        switch pdu.command {
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            let (response, out) = leConnectionRequested(
                psm: psm, scid: scid, mtu: mtu, mps: mps, credits: credits, handle: handle, acl: &acl, refusal: refusal)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: response).frame, on: handle)
            guard case .leCreditBasedConnectionResponse(_, _, _, _, let result) = response, result != .successful else { return out }
            return out + warnings.warning("connection \(handle): L2CAP channel to PSM \(psm) refused: \(result)", handle: handle)
        case .creditBasedConnectionRequest(let spsm, let mtu, let mps, let credits, let scids):
            let (response, out) = enhancedConnectionRequested(
                spsm: spsm, mtu: mtu, mps: mps, credits: credits, scids: scids, handle: handle, acl: &acl, refusal: refusal)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: response).frame, on: handle)
            guard case .creditBasedConnectionResponse(_, _, _, let result, _) = response, result != .successful else { return out }
            return out + warnings.warning(
                "connection \(handle): \(scids.count) L2CAP channel(s) to PSM \(spsm) asked, some or all refused: \(result)", handle: handle)
        case .creditBasedReconfigureRequest(let mtu, let mps, let cids):
            let result = reconfigure(mtu: Int(mtu), mps: Int(mps), peerCIDs: cids, handle: handle)
            acl.queue(frame: LESignallingPDU(identifier: pdu.identifier, command: .creditBasedReconfigureResponse(result: result)).frame, on: handle)
            return result == .successful ? reconfiguredBearers(peerCIDs: cids, handle: handle) : []
        case .flowControlCreditIndication(let cid, let credits):
            // The CID is the sender's (§4.24): our channel's peer CID.
            guard let id = channel(peerCID: cid, handle: handle) else { return [] }
            switch acl.addCredits(Int(credits), to: id.cid, on: handle) {
            case .failure(let v): return violated(id, v, now: now, acl: &acl, identifiers: &identifiers)
            case .success, nil: return []
            }
        case .disconnectionRequest(let dcid, let scid):
            let id = CreditBasedChannelID(connection: link, cid: dcid)
            let peer = open[id]?.peer.cid ?? disconnecting[id]?.peerCID
            guard peer == scid else { return nil }  // Command Reject, invalid CID (`peripheralResponse`)
            let wasOpen = open.removeValue(forKey: id) != nil
            disconnecting[id] = nil
            acl.closeChannel(dcid, on: handle)
            let response = LESignallingPDU(identifier: pdu.identifier, command: .disconnectionResponse(destinationCID: dcid, sourceCID: scid))
            acl.queue(frame: response.frame, on: handle)
            return wasOpen ? [event(.closed(id, reason: "the central disconnected it"))] : []
        case .disconnectionResponse(_, let scid):
            disconnecting[CreditBasedChannelID(connection: link, cid: scid)] = nil
            return []
        default:
            return nil
        }
    }

    private func channel(peerCID: UInt16, handle: UInt16) -> CreditBasedChannelID? {
        open.first { $0.key.connection.rawValue == handle && $0.value.peer.cid == peerCID }?.key
    }

    /// The server that takes channels to `psm`: an app's, or Enhanced ATT (0x0027, only with
    /// an Enhanced Credit Based Connection Request, `enhanced`, and only while it is on).
    private func server(for psm: UInt16, enhanced: Bool) -> L2CAPChannelServer? {
        guard psm != Self.eattPSM else { return enhanced && enhancedATT ? Self.eattServer : nil }
        return servers.first { $0.psm == psm }
    }

    /// Why a link is not secure enough for `required`, as a connection result (§4.23).
    /// Unencrypted: Insufficient Encryption when we hold a bond for the central (it only
    /// has to encrypt with its key), else Insufficient Authentication (it must pair first) —
    /// Zephyr's reading; a key shorter than 7 octets: Encryption Key Size Too Short;
    /// unauthenticated keys for `.authentication`: Insufficient Authentication.
    static func securityRefusal(_ required: L2CAPChannelSecurity, link c: HostConnection?, bonds: [Bond]) -> LECreditBasedConnectionResult? {
        guard required != .none, let c else { return nil }
        guard c.security.isEncrypted else {
            return bonds.bond(for: c.peerAddress) != nil ? .insufficientEncryption : .insufficientAuthentication
        }
        if let size = c.keySize, size < minimumChannelKeySize { return .encryptionKeySizeTooShort }
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
            return open[id] == nil && disconnecting[id] == nil && !taken.contains(cid)
        }
    }

    /// Opens the channel (the response is the caller's).
    private mutating func openChannel(_ ch: CreditBasedChannel, peerCredits: UInt16, acl: inout ACLScheduler) -> HostOutput {
        open[ch.id] = ch
        acl.openChannel(ch.id.cid, peerCID: ch.peer.cid, credits: Int(peerCredits), on: ch.id.connection.rawValue)
        if ch.psm == Self.eattPSM { eattBearers.insert(ch.id) }
        return event(.opened(ch.id, server: ch.server, psm: ch.psm, peerMTU: ch.peer.mtu, mtu: ch.local.mtu))
    }

    /// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ (§4.22): checked as Linux and Zephyr do —
    /// parameters, LE_PSM, security, source CID, then our resources.
    private mutating func leConnectionRequested(
        psm: UInt16, scid: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, handle: UInt16, acl: inout ACLScheduler,
        refusal: (L2CAPChannelSecurity) -> LECreditBasedConnectionResult?
    ) -> (LESignallingCommand, [HostOutput]) {
        func refuse(_ r: LECreditBasedConnectionResult) -> (LESignallingCommand, [HostOutput]) {
            (.leCreditBasedConnectionResponse(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: r), [])
        }
        guard mtu >= 23, (23...65533).contains(mps) else { return refuse(.unacceptableParameters) }
        guard let server = server(for: psm, enhanced: false) else { return refuse(.lePSMNotSupported) }
        if let r = refusal(server.security) { return refuse(r) }
        if let r = sourceCIDRefusal(scid, handle: handle, taken: []) { return refuse(r) }
        guard let cid = freeCID(handle: handle, taken: []) else { return refuse(.noResourcesAvailable) }
        let ours = CreditBasedEndpoint(cid: cid, mtu: server.mtu, mps: CreditBasedChannel.mps(forMTU: server.mtu, minimum: 23))
        let given = CreditBasedChannel.initialCredits(mtu: ours.mtu, mps: ours.mps)
        let ch = CreditBasedChannel(
            id: CreditBasedChannelID(connection: ConnectionID(handle), cid: cid), mode: .leCreditBased, psm: psm, server: server.id,
            local: ours, peer: CreditBasedEndpoint(cid: scid, mtu: Int(mtu), mps: Int(mps)), initialCredits: given)
        let response = LESignallingCommand.leCreditBasedConnectionResponse(
            destinationCID: cid, mtu: UInt16(ours.mtu), mps: UInt16(ours.mps), initialCredits: UInt16(given), result: .successful)
        return (response, [openChannel(ch, peerCredits: credits, acl: &acl)])
    }

    /// L2CAP_CREDIT_BASED_CONNECTION_REQ (§4.25, §4.26): all channels refused for the request
    /// as a whole (count, parameters, SPSM, security), else each source CID on its own
    /// ("some refused": the result names the last refusal, the CID is 0x0000).
    private mutating func enhancedConnectionRequested(
        spsm: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, scids: [UInt16], handle: UInt16, acl: inout ACLScheduler,
        refusal: (L2CAPChannelSecurity) -> LECreditBasedConnectionResult?
    ) -> (LESignallingCommand, [HostOutput]) {
        func refuse(_ r: LECreditBasedConnectionResult) -> (LESignallingCommand, [HostOutput]) {
            (.creditBasedConnectionResponse(mtu: 0, mps: 0, initialCredits: 0, result: r, destinationCIDs: scids.map { _ in 0 }), [])
        }
        let minimum = LESignallingCommand.minimumEnhancedMTU
        guard (1...LESignallingCommand.maximumEnhancedChannels).contains(scids.count) else { return refuse(.invalidParameters) }
        guard mtu >= minimum, mps >= minimum, mps <= 65533 else { return refuse(.unacceptableParameters) }
        guard let server = server(for: spsm, enhanced: true) else { return refuse(.lePSMNotSupported) }
        if let r = refusal(server.security) { return refuse(r) }
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
            out.append(openChannel(ch, peerCredits: credits, acl: &acl))
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
            guard let id = channel(peerCID: cid, handle: handle), open[id]?.mode == .enhancedCreditBased else { return .invalidDestinationCID }
            ids.append(id)
        }
        for id in ids {
            guard let peer = open[id]?.peer else { continue }
            if mtu < peer.mtu { return .mtuReductionNotAllowed }
            if mps < peer.mps, ids.count > 1 { return .mpsReductionNotAllowed }
        }
        for id in ids {
            open[id]?.peer.mtu = mtu
            open[id]?.peer.mps = mps
        }
        return .successful
    }
}
