import DequeModule

/// Outgoing ACL data for every connection (Core Spec Vol 4 Part E §4.1.1, host flow
/// control): never more packets in the controller than it has LE ACL buffers (credits
/// come back with Number Of Completed Packets), round-robin over connections, whole L2CAP
/// frames fragmented to the controller's packet length. Signalling and SMP frames go
/// before ATT PDUs; ATT PDUs are taken one at a time (`readyForATT`), which is how the
/// controller's buffers push back on the ATT server's queues.
struct ACLScheduler: Sendable {
    private struct Link: Sendable {
        var inFlight = 0
        /// Fragments of frames already taken, in order.
        var fragments: Deque<HCIACLPacket> = []
        /// Signalling/SMP frames waiting for the fragments to drain.
        var frames: Deque<L2CAPBasicFrame> = []
        /// The ATT PDU handed over and not fragmented yet.
        var att: [UInt8]?
        /// The upper layer was told it may send one ATT PDU and has not yet.
        var attInvited = false
    }

    private(set) var credits = 0
    private(set) var totalBuffers = 1
    private(set) var packetLength = 27
    private var links: [UInt16: Link] = [:]
    private var roundRobin: [UInt16] = []

    /// The controller's LE ACL buffers (from LE Read Buffer Size or Read Buffer Size).
    mutating func configure(packetLength: Int, buffers: Int) {
        self.packetLength = packetLength
        totalBuffers = buffers
        credits = buffers
    }

    mutating func open(_ handle: UInt16) {
        links[handle] = Link()
        roundRobin.append(handle)
    }

    /// Packets of a closed connection are flushed: their buffers are free again (§4.3).
    mutating func close(_ handle: UInt16) {
        guard let l = links.removeValue(forKey: handle) else { return }
        credits = min(totalBuffers, credits + l.inFlight)
        roundRobin.removeAll { $0 == handle }
    }

    func isOpen(_ handle: UInt16) -> Bool { links[handle] != nil }

    /// Packets in the controller, per connection.
    var inFlight: [UInt16: Int] { links.mapValues(\.inFlight) }

    /// Number Of Completed Packets for one connection.
    mutating func completed(_ handle: UInt16, count: Int) {
        let n = min(count, links[handle]?.inFlight ?? 0)
        links[handle]?.inFlight -= n
        credits = min(totalBuffers, credits + n)
    }

    mutating func queue(frame: L2CAPBasicFrame, on handle: UInt16) { links[handle]?.frames.append(frame) }

    /// An ATT PDU from the upper layer (after `readyForATT` named this connection).
    mutating func queue(att pdu: [UInt8], on handle: UInt16) {
        guard links[handle] != nil else { return }
        links[handle]?.att = pdu
        links[handle]?.attInvited = false
    }

    /// Hands out as many ACL packets as there are credits, round-robin, and names the
    /// connections that may now hand over an ATT PDU. (Each link is looked up once per turn
    /// and changed in place: this runs for every packet sent.)
    mutating func pump() -> (packets: [HCIACLPacket], readyForATT: [UInt16]) {
        var packets: [HCIACLPacket] = []
        var idle = 0
        while credits > 0, !roundRobin.isEmpty, idle < roundRobin.count {
            let h = roundRobin.removeFirst()
            roundRobin.append(h)
            guard let i = links.index(forKey: h), let packet = Self.nextPacket(&links.values[i], handle: h, packetLength: packetLength) else {
                idle += 1
                continue
            }
            idle = 0
            credits -= 1
            packets.append(packet)
        }
        var ready: [UInt16] = []
        if credits > 0 {
            for h in roundRobin {
                guard let i = links.index(forKey: h) else { continue }
                let l = links.values[i]
                guard l.fragments.isEmpty, l.frames.isEmpty, l.att == nil, !l.attInvited else { continue }
                links.values[i].attInvited = true
                ready.append(h)
            }
        }
        return (packets, ready)
    }

    /// The link's next fragment (counted in flight), refilling from its next frame when its
    /// fragments drained; nil when it has nothing to send.
    private static func nextPacket(_ l: inout Link, handle h: UInt16, packetLength: Int) -> HCIACLPacket? {
        if l.fragments.isEmpty { refill(&l, handle: h, packetLength: packetLength) }
        guard let packet = l.fragments.popFirst() else { return nil }
        l.inFlight += 1
        return packet
    }

    /// The next frame of a connection whose fragments drained: signalling/SMP first.
    private static func refill(_ l: inout Link, handle h: UInt16, packetLength: Int) {
        let frame: L2CAPBasicFrame
        if let f = l.frames.popFirst() {
            frame = f
        } else if let pdu = l.att {
            l.att = nil
            frame = L2CAPBasicFrame(channelID: .att, payload: pdu)
        } else {
            return
        }
        guard let bytes = try? frame.encoded() else { return }
        l.fragments.append(contentsOf: ACLFragmenter.fragment(bytes, handle: h, maximumDataLength: packetLength))
    }

    /// Violations of the flow-control invariants (empty when they hold): credits plus the
    /// packets in flight never exceed the controller's buffers, and nothing is negative.
    var invariantViolations: [String] {
        var v: [String] = []
        let inFlight = links.values.reduce(0) { $0 + $1.inFlight }
        if credits < 0 { v.append("negative credits \(credits)") }
        if credits + inFlight > totalBuffers { v.append("credits \(credits) + in flight \(inFlight) > buffers \(totalBuffers)") }
        for (h, l) in links where l.inFlight < 0 { v.append("handle \(h): negative in-flight count") }
        if Set(roundRobin) != Set(links.keys) || roundRobin.count != links.count { v.append("round-robin list out of step with the links") }
        return v
    }
}
