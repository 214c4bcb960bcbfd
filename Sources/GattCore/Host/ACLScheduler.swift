import DequeModule

/// Outgoing ACL data for every connection (Core Spec Vol 4 Part E §4.1.1, host flow
/// control): never more packets in the controller than it has LE ACL buffers (credits
/// come back with Number Of Completed Packets), round-robin over connections, whole L2CAP
/// frames fragmented to the controller's packet length. Signalling and SMP frames go
/// before ATT PDUs; ATT PDUs are taken one at a time (`readyForATT`), which is how the
/// controller's buffers push back on the ATT server's queues.
struct ACLScheduler: Sendable {
    struct Link: Sendable {
        let handle: UInt16
        fileprivate(set) var inFlight = 0
        /// Fragments of frames already taken, in order, as HCI ACL packets (header included).
        fileprivate var fragments: Deque<[UInt8]> = []
        /// Signalling/SMP frames waiting for the fragments to drain.
        fileprivate var frames: Deque<L2CAPBasicFrame> = []
        /// The ATT PDU handed over and not fragmented yet.
        fileprivate var att: [UInt8]?
        /// The upper layer was told it may send one ATT PDU and has not yet.
        fileprivate var attInvited = false
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
            out.append(.send(H4Packet(type: .acl, body: packet)))
        }
        guard credits > 0 else { return }
        for k in 0..<links.count {
            let i = (cursor + k) % links.count
            guard links[i].fragments.isEmpty, links[i].frames.isEmpty, links[i].att == nil, !links[i].attInvited else { continue }
            links[i].attInvited = true
            out.append(.event(.transport(.readyToSend(ConnectionID(links[i].handle)))))
        }
    }

    /// The link's next fragment (counted in flight), refilling from its next frame when its
    /// fragments drained; nil when it has nothing to send.
    private static func nextPacket(_ l: inout Link, packetLength: Int) -> [UInt8]? {
        if l.fragments.isEmpty {
            // The next frame, signalling/SMP first; one that fits one packet skips the queue.
            let payload: [UInt8]
            let channel: L2CAPChannelID
            if let f = l.frames.popFirst() {
                (payload, channel) = (f.payload, f.channelID)
            } else if let pdu = l.att {
                l.att = nil
                (payload, channel) = (pdu, .att)
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
