import GattCore

// Enhanced ATT bearers (Core Spec Vol 3 Part F §3.2.11, Part A §4.25–§4.27): Enhanced Credit
// Based channels a central opens on PSM 0x0027 (only with EATT on, only on an encrypted link)
// are ATT bearers of the core, never sockets: their SDUs go up as `.received` with their
// credits returned at once (the core consumes synchronously), readiness as `.readyToSend`,
// opening, reconfiguration and closing as `.enhancedBearer`; closing goes both ways.

extension Host {
    /// The PSM of Enhanced ATT (Assigned Numbers, Vol 3 Part F §3.2.11).
    static let eattPSM: UInt16 = 0x0027
    /// Our MTU on Enhanced ATT channels: the largest ATT value (512) with its headers.
    static let eattMTU = 517
    /// Enhanced ATT as a channel server: encryption required (§3.2.11: EATT needs an encrypted
    /// link), so an unencrypted request gets Insufficient Authentication, or Insufficient
    /// Encryption from a bonded central (`securityRefusal`).
    static let eattServer = L2CAPChannelServer(id: "eatt", psm: eattPSM, security: .encryption, mtu: eattMTU)

    /// Accept Enhanced ATT bearers from now on (`true`) or refuse PSM 0x0027 (LE_PSM not
    /// supported); bearers already open stay.
    public mutating func setEnhancedATT(_ enabled: Bool) { enhancedATT = enabled }

    /// Closes an Enhanced ATT bearer's channel (Disconnection Request); no `.closed` follows.
    public mutating func closeEnhancedBearer(_ bearer: BearerID, now: Duration) -> [HostOutput] {
        let id = CreditBasedChannelID(bearer)
        guard eattBearers.contains(id) else { return [] }
        return close(id, now: now)
    }

    /// A channel event as the layer above hears it: an app channel's as `.channel`, an
    /// Enhanced ATT bearer's as the core's bearer events (a closed one is forgotten).
    mutating func channelEvent(_ e: CreditBasedChannelEvent) -> HostOutput {
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

    /// A whole SDU: an app channel's goes up (credits when the program read it); an Enhanced
    /// ATT bearer's goes to the core, and its credits go back now.
    mutating func receivedSDU(_ sdu: [UInt8], on id: CreditBasedChannelID) -> [HostOutput] {
        guard eattBearers.contains(id) else { return [.event(.channel(.received(id, sdu)))] }
        if let credits = channels[id]?.consumed(), credits > 0 {
            let pdu = LESignallingPDU(identifier: nextSignallingIdentifier(), command: .flowControlCreditIndication(cid: id.cid, credits: UInt16(credits)))
            acl.queue(frame: pdu.frame, on: id.connection.rawValue)
        }
        return [channelEvent(.received(id, sdu))]
    }

    /// After a successful Credit Based Reconfigure: each Enhanced ATT bearer named gets its
    /// new ATT_MTU (the smaller of both MTUs; it only grows).
    mutating func reconfiguredBearers(peerCIDs: [UInt16], handle: UInt16) -> [HostOutput] {
        channels.filter { $0.key.connection.rawValue == handle && peerCIDs.contains($0.value.peer.cid) && eattBearers.contains($0.key) }
            .sorted { $0.key.cid < $1.key.cid }
            .map { .event(.transport(.enhancedBearer(BearerID($0.key), .reconfigured(mtu: min($0.value.peer.mtu, $0.value.local.mtu))))) }
    }

    /// The ACL scheduler invites channels with `.channel(.ready)`: an Enhanced ATT bearer's
    /// invitation is the core's `.readyToSend` (outputs from `start` on).
    func routeEnhancedATTReadiness(_ out: inout [HostOutput], from start: Int) {
        for i in start..<out.count {
            guard case .event(.channel(.ready(let id))) = out[i], eattBearers.contains(id) else { continue }
            out[i] = .event(.transport(.readyToSend(BearerID(id))))
        }
    }
}
