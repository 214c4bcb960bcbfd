import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

private func first(_ data: String) -> HCIACLPacket { HCIACLPacket(handle: 0x40, packetBoundary: .firstFlushable, data: h(data)) }
private func cont(_ data: String) -> HCIACLPacket { HCIACLPacket(handle: 0x40, packetBoundary: .continuing, data: h(data)) }

@Suite struct L2CAPBasicFrameTests {
    @Test func roundTrip() throws {
        let f = L2CAPBasicFrame(channelID: .att, payload: h("0A 01 00"))
        #expect(try f.encoded() == h("03 00 04 00 0A 01 00"))
        #expect(try L2CAPBasicFrame(decoding: h("03 00 04 00 0A 01 00")) == f)
        #expect(try L2CAPBasicFrame(decoding: h("00 00 06 00")) == L2CAPBasicFrame(channelID: .smp, payload: []))
        #expect(L2CAPChannelID.leSignalling.rawValue == 5)
        #expect(L2CAPChannelID(0x40).description == "CID 0x0040")
    }

    @Test func rejectsMalformed() {
        #expect(throws: L2CAPDecodingError.truncated(structure: "L2CAP basic frame", needed: 4, actual: 3)) { try L2CAPBasicFrame(decoding: h("03 00 04")) }
        #expect(throws: L2CAPDecodingError.lengthMismatch(structure: "L2CAP basic frame", declared: 3, actual: 2)) {
            try L2CAPBasicFrame(decoding: h("03 00 04 00 0A 01"))
        }
        #expect(throws: L2CAPDecodingError.lengthMismatch(structure: "L2CAP basic frame", declared: 1, actual: 2)) {
            try L2CAPBasicFrame(decoding: h("01 00 04 00 0A 01"))
        }
        #expect(throws: L2CAPDecodingError.payloadTooLong(length: 65536, maximum: 65535)) {
            try L2CAPBasicFrame(channelID: .att, payload: [UInt8](repeating: 0, count: 65536)).encoded()
        }
    }
}

@Suite struct L2CAPReassemblyTests {
    @Test func singlePacketFrame() {
        var r = ACLReassembler()
        #expect(r.push(first("03 00 04 00 0A 01 00")) == [.frame(L2CAPBasicFrame(channelID: .att, payload: h("0A 01 00")))])
        #expect(!r.hasPartialFrame)
    }

    @Test func fragmentedFrameIncludingSplitHeader() {
        var r = ACLReassembler()
        #expect(r.push(first("05 00")) == [])
        #expect(r.hasPartialFrame)
        #expect(r.push(cont("04 00 12")) == [])
        #expect(r.push(cont("")) == [])
        #expect(r.push(cont("03 00 AA")) == [])
        #expect(r.push(cont("BB")) == [.frame(L2CAPBasicFrame(channelID: .att, payload: h("12 03 00 AA BB")))])
        #expect(!r.hasPartialFrame)
    }

    @Test func continuationWithoutStartIsDropped() {
        var r = ACLReassembler()
        #expect(r.push(cont("01 02 03")) == [.error(.continuationWithoutStart(bytes: 3))])
        #expect(r.push(first("01 00 04 00 1E")) == [.frame(L2CAPBasicFrame(channelID: .att, payload: [0x1E]))])
    }

    @Test func newStartWhileIncompleteDropsTheOldFrame() {
        var r = ACLReassembler()
        #expect(r.push(first("05 00 04 00 12")) == [])
        #expect(
            r.push(first("01 00 04 00 1E")) == [.error(.incompleteFrameDiscarded(bytes: 5)), .frame(L2CAPBasicFrame(channelID: .att, payload: [0x1E]))])
        // The non-flushable start flag also starts a frame.
        #expect(r.push(HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: h("01 00 04 00 1E"))).count == 1)
    }

    @Test func overflowIsDropped() {
        var r = ACLReassembler()
        #expect(r.push(first("02 00 04 00 0A")) == [])
        #expect(r.push(cont("01 00")) == [.error(.frameOverflow(declared: 2, received: 3))])
        #expect(!r.hasPartialFrame)
        #expect(r.push(first("01 00 04 00 0A 01")) == [.error(.frameOverflow(declared: 1, received: 2))])
    }

    @Test func tooLongIsDropped() {
        var r = ACLReassembler(maximumPayloadLength: 27)
        #expect(r.maximumPayloadLength == 27)
        #expect(r.push(first("1C 00 04 00 01 02")) == [.error(.frameTooLong(declared: 28, maximum: 27))])
        #expect(r.push(cont("03 04")) == [.error(.continuationWithoutStart(bytes: 2))])
        #expect(ACLReassembler(maximumPayloadLength: 1_000_000).maximumPayloadLength == 65535)
        #expect(ACLReassembler(maximumPayloadLength: -5).maximumPayloadLength == 0)
    }

    @Test func completeFlushableFlagIsRejected() {
        var r = ACLReassembler()
        #expect(r.push(HCIACLPacket(handle: 0x40, packetBoundary: .completeFlushable, data: h("01 00 04 00 0A"))) == [.error(.invalidPacketBoundary(3))])
        #expect(ACLReassemblyError.invalidPacketBoundary(3).description == "ACL packet boundary flag 0b11 is not valid on LE; dropped")
    }

    @Test func resetDropsPartialFrame() {
        var r = ACLReassembler()
        _ = r.push(first("05 00 04"))
        r.reset()
        #expect(r.push(cont("00 01 02 03 04 05")) == [.error(.continuationWithoutStart(bytes: 6))])
    }
}

/// The host's fragmenter, its packets decoded.
private func fragments(_ frame: L2CAPBasicFrame, handle: UInt16, packetLength: Int) throws -> [HCIACLPacket] {
    var packets: [H4Packet] = []
    ACLFragmenter.fragment(frame.payload, channel: frame.channelID, handle: handle, packetLength: packetLength, into: &packets)
    return try packets.map { p throws(HCIDecodingError) in try HCIACLPacket(decoding: p.body) }
}

@Suite struct L2CAPFragmenterTests {
    @Test func fragmentsToTheControllerLimit() throws {
        let frame = L2CAPBasicFrame(channelID: .att, payload: Array(1...10))
        let packets = try fragments(frame, handle: 0x41, packetLength: 5)
        #expect(packets.map(\.packetBoundary) == [.firstNonFlushable, .continuing, .continuing])
        #expect(packets.map(\.data) == [h("0A 00 04 00 01"), h("02 03 04 05 06"), h("07 08 09 0A")])
        #expect(packets.allSatisfy { $0.handle == 0x41 })
        #expect(packets[0].encoded() == h("41 00 05 00 0A 00 04 00 01"))
        #expect(packets[1].encoded() == h("41 10 05 00 02 03 04 05 06"))

        var r = ACLReassembler()
        let outputs = packets.flatMap { r.push($0) }
        #expect(outputs == [.frame(frame)])
    }

    @Test func exactMultipleAndSinglePacket() throws {
        let frame = L2CAPBasicFrame(channelID: .att, payload: Array(1...6))
        #expect(try fragments(frame, handle: 1, packetLength: 5).map(\.data.count) == [5, 5])
        #expect(try fragments(frame, handle: 1, packetLength: 27).map(\.data.count) == [10])
        #expect(try fragments(frame, handle: 1, packetLength: 10).map(\.data.count) == [10])
    }

    @Test func degenerateLimits() throws {
        // A packet length below 1 is 1: the header's bytes one by one, then the payload's.
        let frame = L2CAPBasicFrame(channelID: .att, payload: [1, 2, 3])
        #expect(try fragments(frame, handle: 1, packetLength: 0).map(\.data) == [[3], [0], [4], [0], [1], [2], [3]])
        // An empty payload is one packet holding the header alone.
        #expect(try fragments(L2CAPBasicFrame(channelID: .smp, payload: []), handle: 1, packetLength: 27)
            == [HCIACLPacket(handle: 1, packetBoundary: .firstNonFlushable, data: h("00 00 06 00"))])
        // A payload above 65,535 bytes cannot be framed: nothing is sent.
        var packets: [H4Packet] = []
        ACLFragmenter.fragment([UInt8](repeating: 0, count: 0x10000), channel: .att, handle: 1, packetLength: 27, into: &packets)
        #expect(packets.isEmpty)
    }

    @Test func largeFrameRoundTrips() throws {
        let frame = L2CAPBasicFrame(channelID: .att, payload: (0..<517).map { UInt8($0 & 0xFF) })
        for limit in [1, 23, 27, 251, 1021] {
            var r = ACLReassembler(maximumPayloadLength: 517)
            let packets = try fragments(frame, handle: 2, packetLength: limit)
            #expect(packets.allSatisfy { $0.data.count <= limit })
            #expect(packets.flatMap { r.push($0) } == [.frame(frame)], "limit \(limit)")
        }
    }
}
