import GattCore

/// Splits L2CAP frames into ACL data packets the controller accepts
/// (Core Spec Vol 3 Part A §7.2), built straight into the packets' bytes (the host's send
/// path, no `L2CAPBasicFrame` or `HCIACLPacket` in between): the first packet has PB = 0b00
/// (first non-automatically-flushable), the following ones PB = 0b01 (continuing), and
/// none carries more than `packetLength` bytes (the controller's LE ACL Data Packet
/// Length from LE Read Buffer Size, or Read Buffer Size when that is 0).
enum ACLFragmenter {
    /// The HCI ACL packets of the L2CAP basic frame of `payload` on `channel`, appended to
    /// `out`; each keeps the payload (no copy: the writer copies it, `H4Packet.bodyParts`). A
    /// `packetLength` below 1 is treated as 1; nothing for a payload above 65,535 bytes.
    static func fragment<Packets: RangeReplaceableCollection<H4Packet>>(
        _ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16, packetLength: Int, into out: inout Packets
    ) {
        guard payload.count <= L2CAPBasicFrame.maximumPayloadLength else { return }
        let total = L2CAPBasicFrame.headerLength + payload.count
        let size = max(1, min(packetLength, 0xFFFF))
        var start = 0
        repeat {
            let end = min(start + size, total)
            out.append(H4Packet(aclOf: payload, channel: channel, handle: handle, frameBytes: start..<end))
            start = end
        } while start < total
    }

    /// The one packet of a frame that fits the controller's buffer.
    static func onePacket(_ payload: [UInt8], channel: L2CAPChannelID, handle: UInt16) -> H4Packet {
        H4Packet(aclOf: payload, channel: channel, handle: handle, frameBytes: 0..<(L2CAPBasicFrame.headerLength + payload.count))
    }
}
