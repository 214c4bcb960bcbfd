import GattCore

/// Splits L2CAP frames into ACL data packets the controller accepts
/// (Core Spec Vol 3 Part A §7.2), built straight into the packets' bytes (the host's send
/// path, no `L2CAPBasicFrame` or `HCIACLPacket` in between): the first packet has PB = 0b00
/// (first non-automatically-flushable), the following ones PB = 0b01 (continuing), and
/// none carries more than `packetLength` bytes (the controller's LE ACL Data Packet
/// Length from LE Read Buffer Size, or Read Buffer Size when that is 0).
enum ACLFragmenter {
    /// The encoded HCI ACL packets of the L2CAP basic frame of `payload` on `channel`,
    /// appended to `out`. A `packetLength` below 1 is treated as 1; nothing for a payload
    /// above 65,535 bytes.
    static func fragment<Packets: RangeReplaceableCollection<[UInt8]>>(
        _ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16, packetLength: Int, into out: inout Packets
    ) {
        guard payload.count <= L2CAPBasicFrame.maximumPayloadLength else { return }
        let total = L2CAPBasicFrame.headerLength + payload.count
        let size = max(1, min(packetLength, 0xFFFF))
        var start = 0
        repeat {
            let end = min(start + size, total)
            out.append(packet(payload, channel: channel, handle: handle, frameBytes: start..<end))
            start = end
        } while start < total
    }

    /// The one encoded packet of a frame that fits the controller's buffer.
    static func onePacket(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16) -> [UInt8] {
        packet(payload, channel: channel, handle: handle, frameBytes: 0..<(L2CAPBasicFrame.headerLength + payload.count))
    }

    /// The HCI ACL packet (Vol 4 Part E §5.4.2) carrying bytes `frameBytes` of the L2CAP
    /// basic frame (Vol 3 Part A §3.1) of `payload` on `channel`.
    private static func packet(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16, frameBytes r: Range<Int>) -> [UInt8] {
        let header = L2CAPBasicFrame.headerLength
        let word = handle & 0x0FFF | (r.lowerBound == 0 ? 0 : UInt16(ACLPacketBoundary.continuing.rawValue) << 12)
        var p: [UInt8] = []
        p.reserveCapacity(HCIACLPacket.headerLength + r.count)
        p.append(UInt8(word & 0xFF))
        p.append(UInt8(word >> 8))
        p.append(UInt8(r.count & 0xFF))
        p.append(UInt8(r.count >> 8))
        // The L2CAP header's bytes in this packet: all four at once, or those a tiny buffer leaves it.
        let frameHeader = UInt32(payload.count & 0xFFFF) | UInt32(channel.rawValue) << 16
        var k = r.lowerBound
        if k == 0, r.upperBound >= header {
            p.append(UInt8(payload.count & 0xFF))
            p.append(UInt8(payload.count >> 8))
            p.append(UInt8(channel.rawValue & 0xFF))
            p.append(UInt8(channel.rawValue >> 8))
            k = header
        }
        while k < min(r.upperBound, header) {
            p.append(UInt8(truncatingIfNeeded: frameHeader >> (8 * k)))
            k += 1
        }
        if r.upperBound > header { p.append(contentsOf: payload[(max(r.lowerBound, header) - header)..<(r.upperBound - header)]) }
        return p
    }
}
