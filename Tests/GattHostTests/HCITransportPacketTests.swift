import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

@Suite struct HCIH4Tests {
    static let stream = h(
        "04 0E 04 01 03 0C 00"  // event: Command Complete (Reset)
            + "02 40 20 07 00 03 00 04 00 0A 01 00"  // ACL: ATT Read Request
            + "01 03 0C 00"  // command: Reset
            + "03 01 00 02 AA BB"  // SCO
            + "05 01 00 02 C0 CC DD"  // ISO, upper length bits are flags
            + "04 05 04 00 40 00 13")  // Disconnection Complete
    static let expected: [H4Packet] = [
        H4Packet(type: .event, body: h("0E 04 01 03 0C 00")),
        H4Packet(type: .acl, body: h("40 20 07 00 03 00 04 00 0A 01 00")),
        H4Packet(type: .command, body: h("03 0C 00")),
        H4Packet(type: .sco, body: h("01 00 02 AA BB")),
        H4Packet(type: .iso, body: h("01 00 02 C0 CC DD")),
        H4Packet(type: .event, body: h("05 04 00 40 00 13")),
    ]

    @Test func deframesAWholeStream() {
        var d = H4Deframer()
        #expect(d.feed(Self.stream) == Self.expected.map { .packet($0) })
        #expect(d.bufferedByteCount == 0)
    }

    @Test func deframesByteByByte() throws {
        var d = H4Deframer()
        var packets: [H4Packet] = []
        for b in Self.stream {
            d.append([b])
            while let p = try d.nextPacket() { packets.append(p) }
        }
        #expect(packets == Self.expected)
    }

    @Test func deframesAnyChunking() {
        for chunk in 1...Self.stream.count {
            var d = H4Deframer()
            var out: [H4Deframer.Output] = []
            var i = 0
            while i < Self.stream.count {
                out += d.feed(Self.stream[i..<min(i + chunk, Self.stream.count)])
                i += chunk
            }
            #expect(out == Self.expected.map { .packet($0) }, "chunk \(chunk)")
        }
    }

    /// The raw-bytes `append` (what the H4 reader passes a read buffer as) frames like the generic one.
    @Test func deframesRawBytesInAnyChunking() throws {
        for chunk in 1...Self.stream.count {
            var d = H4Deframer()
            var packets: [H4Packet] = []
            var i = 0
            while i < Self.stream.count {
                Array(Self.stream[i..<min(i + chunk, Self.stream.count)]).withUnsafeBytes { d.append($0) }
                while let p = try d.nextPacket() { packets.append(p) }
                i += chunk
            }
            #expect(packets == Self.expected, "chunk \(chunk)")
            #expect(d.bufferedByteCount == 0)
        }
    }

    @Test func partialPacketWaits() throws {
        var d = H4Deframer()
        d.append(h("04 0E 04 01 03"))
        #expect(try d.nextPacket() == nil)
        #expect(d.bufferedByteCount == 5)
        d.append(h("0C 00"))
        #expect(try d.nextPacket() == H4Packet(type: .event, body: h("0E 04 01 03 0C 00")))
        #expect(try d.nextPacket() == nil)
    }

    @Test func badIndicatorIsDroppedAndReported() throws {
        var d = H4Deframer()
        let out = d.feed(h("00 FF 04 0E 04 01 03 0C 00"))
        #expect(
            out == [
                .error(.invalidPacketIndicator(0x00)), .error(.invalidPacketIndicator(0xFF)),
                .packet(H4Packet(type: .event, body: h("0E 04 01 03 0C 00"))),
            ])
        #expect(H4DeframerError.invalidPacketIndicator(0x06).description == "invalid H4 packet indicator 0x06 (expected 0x01...0x05); byte dropped")
        // The throwing API: one error per bad byte, then the packet.
        var d2 = H4Deframer()
        d2.append(h("07 04 10 01 07"))
        #expect(throws: H4DeframerError.invalidPacketIndicator(0x07)) { try d2.nextPacket() }
        #expect(try d2.nextPacket() == H4Packet(type: .event, body: h("10 01 07")))
    }

    @Test func singlePacketDecoding() throws {
        #expect(try H4Packet(decoding: h("04 0E 04 01 03 0C 00")) == Self.expected[0])
        #expect(try H4Packet(decoding: h("02 40 20 07 00 03 00 04 00 0A 01 00")) == Self.expected[1])
        #expect(throws: H4DeframerError.truncated(expected: 1, actual: 0)) { try H4Packet(decoding: []) }
        #expect(throws: H4DeframerError.invalidPacketIndicator(0x09)) { try H4Packet(decoding: [0x09, 0x00]) }
        #expect(throws: H4DeframerError.truncated(expected: 5, actual: 3)) { try H4Packet(decoding: h("02 40 20")) }
        #expect(throws: H4DeframerError.lengthMismatch(type: .event, expected: 7, actual: 6)) { try H4Packet(decoding: h("04 0E 04 01 03 0C")) }
        #expect(throws: H4DeframerError.lengthMismatch(type: .event, expected: 7, actual: 8)) { try H4Packet(decoding: h("04 0E 04 01 03 0C 00 00")) }
    }

    @Test func encodesPackets() {
        #expect(H4Packet(event: .hardwareError(code: 1)).encoded == h("04 10 01 01"))
        #expect(H4Packet(acl: HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: [0xAA])).encoded == h("02 40 00 01 00 AA"))
    }
}

@Suite struct HCIACLPacketTests {
    @Test func decodesAndEncodes() throws {
        let bytes = h("40 20 07 00 03 00 04 00 0A 01 00")
        let p = try HCIACLPacket(decoding: bytes)
        #expect(p.handle == 0x0040)
        #expect(p.packetBoundary == .firstFlushable)
        #expect(p.broadcastFlag == 0)
        #expect(p.data == h("03 00 04 00 0A 01 00"))
        #expect(p.encoded() == bytes)

        let cont = HCIACLPacket(handle: 0x0EFF, packetBoundary: .continuing, data: [1, 2])
        #expect(cont.encoded() == h("FF 1E 02 00 01 02"))
        #expect(try HCIACLPacket(decoding: cont.encoded()) == cont)
        let flags = try HCIACLPacket(decoding: h("01 F0 00 00"))
        #expect(flags.handle == 1)
        #expect(flags.packetBoundary == .completeFlushable)
        #expect(flags.broadcastFlag == 0b11)
        #expect(flags.data == [])
    }

    @Test func rejectsWrongLengths() {
        #expect(throws: HCIDecodingError.truncatedHeader(packet: "ACL data packet", needed: 4, actual: 3)) { try HCIACLPacket(decoding: h("40 20 07")) }
        #expect(throws: HCIDecodingError.lengthMismatch(packet: "ACL data packet", declared: 7, actual: 6)) {
            try HCIACLPacket(decoding: h("40 20 07 00 03 00 04 00 0A 01"))
        }
        #expect(throws: HCIDecodingError.lengthMismatch(packet: "ACL data packet", declared: 0, actual: 1)) { try HCIACLPacket(decoding: h("40 20 00 00 01")) }
    }
}
