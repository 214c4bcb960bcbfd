import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// K-frames, SDU segmentation and reassembly, credits (Core Spec Vol 3 Part A §3.4.3, §10.1).
@Suite struct CreditBasedChannelTests {
    static func channel(mtu: Int = 100, mps: Int = 23, credits: Int = 10) -> CreditBasedChannel {
        CreditBasedChannel(
            id: CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x40), mode: .leCreditBased, psm: 0x80, server: "s",
            local: CreditBasedEndpoint(cid: 0x40, mtu: mtu, mps: mps), peer: CreditBasedEndpoint(cid: 0x41, mtu: 64, mps: 23),
            initialCredits: credits)
    }

    @Test func segmentationLeadsWithTheSDULength() {
        // 30 bytes at MPS 23: 2 + 21 in the first K-frame, the 9 left in the second.
        let sdu = (0..<30).map { UInt8($0) }
        let frames = CreditBasedChannel.segment(sdu, mps: 23)
        #expect(frames == [[30, 0] + Array(sdu[0..<21]), Array(sdu[21...])])
        #expect(CreditBasedChannel.kFrames(sduLength: 30, mps: 23) == 2)
        // An SDU that fills the first K-frame exactly, and an empty SDU.
        #expect(CreditBasedChannel.segment([UInt8](repeating: 7, count: 21), mps: 23).count == 1)
        #expect(CreditBasedChannel.segment([], mps: 23) == [[0, 0]])
        #expect(CreditBasedChannel.kFrames(sduLength: 0, mps: 23) == 1)
        // A 65535-byte SDU's length field.
        #expect(CreditBasedChannel.segment([UInt8](repeating: 0, count: 0xFFFF), mps: 247).first?.prefix(2) == [0xFF, 0xFF])
    }

    @Test func parametersFitOneLEPacketAndCoverAnMTU() {
        #expect(CreditBasedChannel.mps(forMTU: 2048, minimum: 23) == 247)
        #expect(CreditBasedChannel.mps(forMTU: 23, minimum: 23) == 25)
        #expect(CreditBasedChannel.mps(forMTU: 30, minimum: 64) == 64)
        // 2048 + 2 bytes at 247 per K-frame: 9 K-frames per SDU, credits for two.
        #expect(CreditBasedChannel.initialCredits(mtu: 2048, mps: 247) == 18)
        #expect(CreditBasedChannel.initialCredits(mtu: 65535, mps: 64) == 2050)
    }

    @Test func reassemblesAcrossKFramesAndReturnsCreditsWhenConsumed() {
        var c = Self.channel()
        let sdu = (0..<50).map { UInt8($0) }
        let frames = CreditBasedChannel.segment(sdu, mps: 23)
        #expect(frames.count == 3)
        #expect(c.receive(kFrame: frames[0]) == .partial)
        #expect(c.receive(kFrame: frames[1]) == .partial)
        #expect(c.receive(kFrame: frames[2]) == .sdu(sdu))
        #expect(c.creditsGiven == 7)
        #expect(c.receive(kFrame: [3, 0, 1, 2, 3]) == .sdu([1, 2, 3]))
        #expect(c.creditsGiven == 6)
        // Credits go back SDU by SDU, oldest first, as many as its K-frames.
        #expect(c.consumed() == 3)
        #expect(c.consumed() == 1)
        #expect(c.consumed() == 0)
        #expect(c.creditsGiven == 10)
        // An empty SDU is one K-frame.
        #expect(c.receive(kFrame: [0, 0]) == .sdu([]))
    }

    @Test func aKFrameWithoutCreditsIsAViolation() {
        var c = Self.channel(credits: 2)
        #expect(c.receive(kFrame: [60, 0] + [UInt8](repeating: 1, count: 21)) == .partial)
        #expect(c.receive(kFrame: [UInt8](repeating: 1, count: 23)) == .partial)
        #expect(c.creditsGiven == 0)
        #expect(c.receive(kFrame: [1]) == .violation(.noCredits))
    }

    @Test func aKFrameLongerThanOurMPSIsAViolation() {
        var c = Self.channel()
        #expect(c.receive(kFrame: [22, 0] + [UInt8](repeating: 1, count: 22)) == .violation(.kFrameLargerThanMPS(length: 24, mps: 23)))
    }

    @Test func anSDULongerThanOurMTUIsAViolation() {
        var c = Self.channel(mtu: 100)
        #expect(c.receive(kFrame: [101, 0, 1]) == .violation(.sduLargerThanMTU(length: 101, mtu: 100)))
        var d = Self.channel(mtu: 100)
        #expect(d.receive(kFrame: [100, 0, 1]) == .partial)
    }

    @Test func kFramesCarryingMoreThanTheSDULengthAreAViolation() {
        var c = Self.channel()
        #expect(c.receive(kFrame: [2, 0, 1, 2, 3]) == .violation(.sduLengthMismatch(declared: 2, received: 3)))
        var d = Self.channel()
        #expect(d.receive(kFrame: [25, 0] + [UInt8](repeating: 1, count: 21)) == .partial)
        #expect(d.receive(kFrame: [1, 2, 3, 4, 5]) == .violation(.sduLengthMismatch(declared: 25, received: 26)))
        // A first K-frame too short for the SDU length field.
        var e = Self.channel()
        #expect(e.receive(kFrame: [1]) == .violation(.sduLengthMismatch(declared: 2, received: 1)))
    }
}
