import GattCore

/// The LE links the host knows (Core Spec Vol 4 Part E §7.7.65.1, §7.7.5): each one's
/// connection (`HostConnection`: its central, its encryption), the reassembler of its
/// incoming ACL data (Vol 3 Part A §7.2), and the warnings logged about what its central
/// sent (`PeerWarnings`). A link's state opens and closes with it here; `Host` tells the
/// other parts (the ACL scheduler, the Security Manager, the channels, link procedures).
struct HostLinkTable: Sendable {
    var connections: [UInt16: HostConnection] = [:]
    private(set) var reassemblers: [UInt16: ACLReassembler] = [:]
    /// Warnings about what a central sent, logged per link (`PeerWarnings.perLink`).
    var warnings = PeerWarnings()

    /// A new link from LE (Enhanced) Connection Complete; nil when its handle is connected
    /// already (re-initialising it would forget packets in flight and partial frames).
    mutating func open(_ c: LEConnectionComplete) -> HostConnection? {
        guard connections[c.handle] == nil else { return nil }
        let conn = HostConnection(handle: c.handle, peerAddress: c.peerAddress, peerAddressType: c.peerAddressType)
        connections[c.handle] = conn
        reassemblers[c.handle] = ACLReassembler()
        return conn
    }

    /// The link closed; nil when no link had that handle.
    mutating func close(_ handle: UInt16) -> HostConnection? {
        guard let conn = connections.removeValue(forKey: handle) else { return nil }
        reassemblers[handle] = nil
        warnings.linkClosed(handle)
        return conn
    }

    /// An ACL packet through its link's reassembler; nil when no link has its handle.
    mutating func reassemble(_ packet: HCIACLPacket) -> [ACLReassembler.Output]? {
        guard connections.index(forKey: packet.handle) != nil, let r = reassemblers.index(forKey: packet.handle) else { return nil }
        // In place: a copy of the reassembler would share, then copy, its partial frame.
        return reassemblers.values[r].push(packet)
    }

    /// The octets of an ACL packet's HCI and L2CAP headers: where a whole frame's payload starts.
    static var frameHeaderLength: Int { HCIACLPacket.headerLength + L2CAPBasicFrame.headerLength }

    /// The link of an ACL packet that carries one whole ATT frame (Vol 3 Part A §3.1: first
    /// fragment, L2CAP length = the rest) on a link with no partial frame: its PDU is the
    /// packet's bytes from `frameHeaderLength` on, as the reassembler would pass it up; nil
    /// for anything else (then decoded and reassembled as usual).
    func wholeATTFrame(_ body: [UInt8]) -> UInt16? {
        let header = Self.frameHeaderLength
        guard body.count >= header else { return nil }
        let word = UInt16(body[0]) | UInt16(body[1]) << 8
        let handle = word & 0x0FFF
        let boundary = ACLPacketBoundary(rawValue: UInt8((word >> 12) & 0b11))
        let length = body.count - header
        guard boundary == .firstNonFlushable || boundary == .firstFlushable,
            Int(body[2]) | Int(body[3]) << 8 == body.count - HCIACLPacket.headerLength,
            Int(body[4]) | Int(body[5]) << 8 == length,
            UInt16(body[6]) | UInt16(body[7]) << 8 == L2CAPChannelID.att.rawValue,
            connections.index(forKey: handle) != nil, let r = reassemblers.index(forKey: handle),
            !reassemblers.values[r].hasPartialFrame, length <= reassemblers.values[r].maximumPayloadLength
        else { return nil }
        return handle
    }

    /// An LE Long Term Key Request was answered with a key worth `security`.
    mutating func keyGiven(_ handle: UInt16, worth security: SMPLinkSecurity?) { connections[handle]?.pendingSecurity = security }

    /// Encryption Change (Vol 4 Part E §7.7.8) or Key Refresh Complete (§7.7.39) with
    /// success: the link's level and key size from the key the LTK request was answered
    /// with (`on`: encrypted now). Nil when no link has that handle.
    mutating func encryptionChanged(_ handle: UInt16, on: Bool) -> HostConnection? {
        guard var c = connections[handle] else { return nil }
        let link = on ? c.pendingSecurity : nil
        c.security = on ? (link?.level ?? max(c.security, .medium)) : .low
        c.keySize = on ? (link?.keySize ?? c.keySize) : nil
        connections[handle] = c
        return c
    }
}
