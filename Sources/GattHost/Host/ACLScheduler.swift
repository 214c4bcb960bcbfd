import DequeModule
import GattCore

/// Outgoing ACL data for every connection (Core Spec Vol 4 Part E §4.1.1, host flow
/// control): never more packets in the controller than it has LE ACL buffers (credits
/// come back with Number Of Completed Packets), round-robin over connections, whole L2CAP
/// frames fragmented to the controller's packet length. Signalling and SMP frames go
/// before ATT PDUs; ATT PDUs are taken one at a time (`readyForATT`), which is how the
/// controller's buffers push back on the ATT server's queues. Within a link, the ATT
/// channel and each credit-based channel take turns, one L2CAP frame each; a channel's
/// K-frames go only while the peer gave credits (Vol 3 Part A §10.1), and a channel that
/// drained is invited to hand over its next SDU (`.channel(.ready)`).
struct ACLScheduler: Sendable {
    struct Link: Sendable {
        let handle: UInt16
        fileprivate(set) var inFlight = 0
        /// Fragments of frames already taken, in order, as HCI ACL packets (header included).
        fileprivate var fragments: Deque<H4Packet> = []
        /// Signalling/SMP frames waiting for the fragments to drain.
        fileprivate var frames: Deque<L2CAPBasicFrame> = []
        /// The ATT PDU handed over and not fragmented yet.
        fileprivate var att: [UInt8]?
        /// The upper layer was told it may send one ATT PDU and has not yet.
        fileprivate var attInvited = false
        /// The sending halves of the link's credit-based channels.
        fileprivate(set) var channels: [ChannelQueue] = []
        /// Whose frame goes next: 0 the ATT channel, i + 1 `channels[i]`.
        fileprivate var turn = 0
    }

    /// The sending half of a credit-based channel (Vol 3 Part A §3.4.3): K-frames of the
    /// SDUs handed over, and the credits the peer gave.
    struct ChannelQueue: Sendable {
        let cid: UInt16
        let peerCID: UInt16
        fileprivate(set) var credits: Int
        fileprivate var kFrames: Deque<[UInt8]> = []
        /// The layer above was told it may hand over an SDU and has not yet.
        fileprivate var invited = false
        /// Invite once the K-frames have left even without credits (the layer above has
        /// nothing more to send but must learn that its last SDU left: `inviteWhenSent`).
        fileprivate var inviteWhenSent = false
        var isDrained: Bool { kFrames.isEmpty }
    }

    private(set) var credits = 0
    private(set) var totalBuffers = 1
    private(set) var packetLength = 27
    /// The links; the round-robin order is `links[cursor...]` then `links[..<cursor]`.
    /// (An array, not a dictionary: a handful of links, looked up for every packet.)
    private(set) var links: [Link] = []
    private(set) var cursor = 0

    /// The controller's LE ACL buffers (from LE Read Buffer Size or Read Buffer Size).
    mutating func configure(packetLength: Int, buffers: Int) {
        self.packetLength = packetLength
        totalBuffers = buffers
        credits = buffers
    }

    private func index(of handle: UInt16) -> Int? {
        var i = 0
        while i < links.count {
            if links[i].handle == handle { return i }
            i += 1
        }
        return nil
    }

    /// A new link goes last in the round-robin order.
    mutating func open(_ handle: UInt16) {
        if let i = index(of: handle) {
            links[i] = Link(handle: handle)
            return
        }
        links.insert(Link(handle: handle), at: cursor)
        cursor = cursor + 1 == links.count ? 0 : cursor + 1
    }

    /// Packets of a closed connection are flushed: their buffers are free again (§4.3).
    mutating func close(_ handle: UInt16) {
        guard let i = index(of: handle) else { return }
        credits = min(totalBuffers, credits + links[i].inFlight)
        links.remove(at: i)
        if i < cursor { cursor -= 1 }
        if cursor >= links.count { cursor = 0 }
    }

    func isOpen(_ handle: UInt16) -> Bool { index(of: handle) != nil }

    /// Packets in the controller, per connection.
    var inFlight: [UInt16: Int] { Dictionary(uniqueKeysWithValues: links.map { ($0.handle, $0.inFlight) }) }

    /// Number Of Completed Packets for one connection.
    mutating func completed(_ handle: UInt16, count: Int) {
        guard let i = index(of: handle) else { return }
        let n = min(count, links[i].inFlight)
        links[i].inFlight -= n
        credits = min(totalBuffers, credits + n)
    }

    /// A well-formed Number Of Completed Packets event (Vol 4 Part E §7.7.19), the one event
    /// of every ACL packet sent, taken straight from its bytes as `completed(_:count:)` would
    /// take its entries; false for any other event (then decoded as usual).
    mutating func completed(eventBody body: [UInt8]) -> Bool {
        guard body.count >= 3, body[0] == HCIEvent.numberOfCompletedPacketsCode, Int(body[1]) == body.count - 2,
            body.count == 3 + 4 * Int(body[2])
        else { return false }
        var k = 3
        while k < body.count {
            let handle = (UInt16(body[k]) | UInt16(body[k + 1]) << 8) & 0x0FFF
            completed(handle, count: Int(UInt16(body[k + 2]) | UInt16(body[k + 3]) << 8))
            k += 4
        }
        return true
    }

    mutating func queue(frame: L2CAPBasicFrame, on handle: UInt16) {
        guard let i = index(of: handle) else { return }
        links[i].frames.append(frame)
    }

    /// An ATT PDU from the upper layer (after `readyForATT` named this connection).
    mutating func queue(att pdu: [UInt8], on handle: UInt16) {
        guard let i = index(of: handle) else { return }
        links[i].att = pdu
        links[i].attInvited = false
    }

    private func index(of cid: UInt16, in link: Int) -> Int? { links[link].channels.firstIndex { $0.cid == cid } }

    /// A credit-based channel opened with `credits` from the peer; it takes turns after ATT.
    mutating func openChannel(_ cid: UInt16, peerCID: UInt16, credits: Int, on handle: UInt16) {
        guard let i = index(of: handle) else { return }
        links[i].channels.removeAll { $0.cid == cid }
        links[i].channels.append(ChannelQueue(cid: cid, peerCID: peerCID, credits: credits))
    }

    /// A channel closed: its K-frames not taken yet are dropped.
    mutating func closeChannel(_ cid: UInt16, on handle: UInt16) {
        guard let i = index(of: handle), let c = index(of: cid, in: i) else { return }
        links[i].channels.remove(at: c)
        if links[i].turn > links[i].channels.count { links[i].turn = 0 }
    }

    /// A Flow Control Credit Indication: the peer's credits after it, or the violation when
    /// they would pass 65535 (Vol 3 Part A §4.24); nil for an unknown channel.
    mutating func addCredits(_ n: Int, to cid: UInt16, on handle: UInt16) -> Result<Int, CreditBasedViolation>? {
        guard let i = index(of: handle), let c = index(of: cid, in: i) else { return nil }
        let total = links[i].channels[c].credits + n
        guard total <= 0xFFFF else { return .failure(.creditOverflow(credits: total)) }
        links[i].channels[c].credits = total
        return .success(total)
    }

    /// An SDU's K-frame payloads for a channel (after `.channel(.ready)` named it).
    mutating func queue(kFrames: [[UInt8]], cid: UInt16, on handle: UInt16) {
        guard let i = index(of: handle), let c = index(of: cid, in: i) else { return }
        links[i].channels[c].kFrames.append(contentsOf: kFrames)
        links[i].channels[c].invited = false
    }

    /// From now on the channel is invited as soon as its K-frames have left, credits or not.
    mutating func inviteWhenSent(_ cid: UInt16, on handle: UInt16) {
        guard let i = index(of: handle), let c = index(of: cid, in: i) else { return }
        links[i].channels[c].inviteWhenSent = true
    }

    /// The sending half of a channel.
    func channel(_ cid: UInt16, on handle: UInt16) -> ChannelQueue? {
        guard let i = index(of: handle), let c = index(of: cid, in: i) else { return nil }
        return links[i].channels[c]
    }

    /// Hands out as many ACL packets as there are credits, round-robin (`.send`), then
    /// names the connections that may now hand over an ATT PDU (`.readyToSend`).
    mutating func pump(into out: inout [HostOutput]) {
        var idle = 0
        while credits > 0, !links.isEmpty, idle < links.count {
            let i = cursor
            cursor = i + 1 == links.count ? 0 : i + 1
            guard let packet = Self.nextPacket(&links[i], packetLength: packetLength) else {
                idle += 1
                continue
            }
            idle = 0
            credits -= 1
            out.append(.send(packet))
        }
        guard credits > 0 else { return }
        for k in 0..<links.count {
            let i = (cursor + k) % links.count
            guard links[i].fragments.isEmpty, links[i].frames.isEmpty, links[i].att == nil, !links[i].attInvited else { continue }
            links[i].attInvited = true
            out.append(.event(.transport(.readyToSend(.fixed(ConnectionID(links[i].handle))))))
        }
        for i in links.indices {
            for c in links[i].channels.indices {
                let q = links[i].channels[c]
                guard q.kFrames.isEmpty, q.credits > 0 || q.inviteWhenSent, !q.invited else { continue }
                links[i].channels[c].invited = true
                out.append(.event(.channel(.ready(CreditBasedChannelID(connection: ConnectionID(links[i].handle), cid: q.cid)))))
            }
        }
    }

    /// The link's next L2CAP frame after signalling and SMP: the ATT channel and the
    /// credit-based channels with credits take turns.
    private static func nextTurn(_ l: inout Link) -> (payload: [UInt8], channel: L2CAPChannelID)? {
        let n = l.channels.count + 1
        for k in 0..<n {
            let t = (l.turn + k) % n
            if t == 0 {
                guard let pdu = l.att else { continue }
                l.att = nil
                l.turn = 1 % n
                return (pdu, .att)
            }
            guard l.channels[t - 1].credits > 0, let frame = l.channels[t - 1].kFrames.popFirst() else { continue }
            l.channels[t - 1].credits -= 1
            l.turn = (t + 1) % n
            return (frame, L2CAPChannelID(l.channels[t - 1].peerCID))
        }
        return nil
    }

    /// The link's next fragment (counted in flight), refilling from its next frame when its
    /// fragments drained; nil when it has nothing to send.
    private static func nextPacket(_ l: inout Link, packetLength: Int) -> H4Packet? {
        if l.fragments.isEmpty {
            // The next frame, signalling/SMP first; one that fits one packet skips the queue.
            let payload: [UInt8]
            let channel: L2CAPChannelID
            if let f = l.frames.popFirst() {
                (payload, channel) = (f.payload, f.channelID)
            } else if let next = nextTurn(&l) {
                (payload, channel) = next
            } else {
                return nil
            }
            if L2CAPBasicFrame.headerLength + payload.count <= packetLength, payload.count <= L2CAPBasicFrame.maximumPayloadLength {
                l.inFlight += 1
                return ACLFragmenter.onePacket(payload, channel: channel, handle: l.handle)
            }
            ACLFragmenter.fragment(payload, channel: channel, handle: l.handle, packetLength: packetLength, into: &l.fragments)
        }
        guard let packet = l.fragments.popFirst() else { return nil }
        l.inFlight += 1
        return packet
    }
}
