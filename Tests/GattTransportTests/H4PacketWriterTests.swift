import GattCore
import NIOCore
import Testing

@testable import GattHost
@testable import GattTransport

/// The one copy of an outgoing ACL packet: kept as its PDU and headers (`H4Packet.bodyParts`),
/// written straight into the transport's buffer, it must read on the wire as the packet
/// built byte by byte (Vol 4 Part E §5.4.2 around Vol 3 Part A §3.1).
@Suite struct H4PacketWriterTests {
    @Test func aKeptFragmentIsWrittenAsItsBytes() throws {
        for length in [0, 1, 3, 4, 5, 23, 251, 517] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            let frame = try L2CAPBasicFrame(channelID: .att, payload: payload).encoded()
            for packetLength in [1, 2, 3, 4, 5, 8, 27, 251, 1021] {
                var packets: [H4Packet] = []
                ACLFragmenter.fragment(payload, channel: .att, handle: 0x0ABC, packetLength: packetLength, into: &packets)
                var wire = ByteBufferAllocator().buffer(capacity: 0)
                var expected: [UInt8] = []
                for (n, p) in packets.enumerated() {
                    wire.writeH4Packet(p)
                    let start = n * max(1, packetLength)
                    let data = Array(frame[start..<min(start + max(1, packetLength), frame.count)])
                    let word: UInt16 = 0x0ABC | (n == 0 ? 0 : 0x1000)
                    expected += [0x02, UInt8(word & 0xFF), UInt8(word >> 8), UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
                }
                #expect(Array(wire.readableBytesView) == expected, "payload \(length), packets of \(packetLength)")
                #expect(packets.map(\.encoded).reduce([], +) == expected)
            }
        }
    }

    @Test func aPacketKeptWholeIsWrittenAsIs() {
        let p = H4Packet(type: .command, body: [0x03, 0x0C, 0x00])
        var wire = ByteBufferAllocator().buffer(capacity: 0)
        wire.writeH4Packet(p)
        #expect(Array(wire.readableBytesView) == [0x01, 0x03, 0x0C, 0x00])
        #expect(p.bodyCount == 3)
    }

    /// Equal by type and body however kept, so a test's expected packet matches the host's.
    @Test func equalityIsByTheBytes() {
        let kept = ACLFragmenter.onePacket([0x1B, 0x03, 0x00, 0x2A], channel: .att, handle: 0x40)
        let built = H4Packet(type: .acl, body: [0x40, 0x00, 0x08, 0x00, 0x04, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00, 0x2A])
        #expect(kept == built)
        #expect(kept.hashValue == built.hashValue)
        var edited = kept
        edited.body[8] = 0x1D
        #expect(edited != built)
        #expect(edited.body[8] == 0x1D)
    }
}
