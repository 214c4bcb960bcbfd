import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

private func randomBytes(_ count: Int, _ rng: inout SplitMix64, bias: [UInt8] = []) -> [UInt8] {
    (0..<count).map { _ in
        if !bias.isEmpty, Int.random(in: 0..<4, using: &rng) == 0 { return bias.randomElement(using: &rng)! }
        return UInt8.random(in: 0...255, using: &rng)
    }
}

/// Seeded random input through every decoder: nothing may trap, and whatever
/// decodes must re-encode to something that decodes to the same value.
@Suite struct HCIFuzzTests {
    @Test func h4DeframerAccountsForEveryByte() {
        var rng = SplitMix64(seed: 0x4834)
        for _ in 0..<300 {
            let input = randomBytes(Int.random(in: 0...300, using: &rng), &rng, bias: [1, 2, 3, 4, 5, 0, 0])
            var oneShot = H4Deframer()
            let whole = oneShot.feed(input)
            var chunked = H4Deframer()
            var pieces: [H4Deframer.Output] = []
            var i = 0
            while i < input.count {
                let n = Int.random(in: 1...17, using: &rng)
                pieces += chunked.feed(input[i..<min(i + n, input.count)])
                i += n
            }
            #expect(pieces == whole)
            var consumed = 0
            for o in whole {
                switch o {
                case .packet(let p): consumed += p.encoded.count
                case .error: consumed += 1
                }
            }
            #expect(consumed + oneShot.bufferedByteCount == input.count)
        }
    }

    @Test func hciEventDecoder() {
        var rng = SplitMix64(seed: 0xE7E7)
        let codes: [UInt8] = [0x05, 0x08, 0x0E, 0x0F, 0x10, 0x13, 0x1A, 0x30, 0x3E]
        let subevents: [UInt8] = [0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0A, 0x0C, 0x29]
        var decoded = 0
        for _ in 0..<5000 {
            let length = Int.random(in: 0...40, using: &rng)
            var params = randomBytes(length, &rng)
            if length > 0, Bool.random(using: &rng) { params[0] = subevents.randomElement(using: &rng)! }
            let code = Bool.random(using: &rng) ? codes.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            // Sometimes a correct length byte, sometimes a random one.
            let lengthByte = Int.random(in: 0..<4, using: &rng) == 0 ? UInt8.random(in: 0...255, using: &rng) : UInt8(length)
            var packet = [code, lengthByte] + params
            if Int.random(in: 0..<10, using: &rng) == 0 { packet = Array(packet.prefix(Int.random(in: 0...2, using: &rng))) }
            guard let event = try? HCIEvent(decoding: packet) else { continue }
            decoded += 1
            #expect((try? HCIEvent(decoding: event.encoded())) == event)
            if case .commandComplete(let c) = event {
                // Typed decoders on random return parameters: an error or a value, never a trap.
                _ = try? c.decode(HCISupportedCommands.self)
                _ = try? c.decode(HCILocalVersionInformation.self)
                _ = try? c.decode(HCIMaximumDataLength.self)
            }
        }
        #expect(decoded > 500)
    }

    @Test func aclReassembler() {
        var rng = SplitMix64(seed: 0xAC1)
        let boundaries: [ACLPacketBoundary] = [.firstNonFlushable, .continuing, .firstFlushable, .completeFlushable, .continuing]
        var r = ACLReassembler(maximumPayloadLength: 64)
        var frames = 0
        for _ in 0..<5000 {
            var data = randomBytes(Int.random(in: 0...30, using: &rng), &rng)
            if data.count >= 2, Bool.random(using: &rng) {
                data[0] = UInt8.random(in: 0...40, using: &rng)
                data[1] = 0
            }
            let packet = HCIACLPacket(handle: 1, packetBoundary: boundaries.randomElement(using: &rng)!, data: data)
            // Also through the ACL packet decoder, with a possibly wrong length.
            var wire = packet.encoded()
            if Int.random(in: 0..<8, using: &rng) == 0, wire.count > 2 { wire[2] &+= 1 }
            guard let decoded = try? HCIACLPacket(decoding: wire) else { continue }
            for output in r.push(decoded) {
                if case .frame(let f) = output {
                    frames += 1
                    #expect(f.payload.count <= 64)
                }
            }
        }
        #expect(frames > 20)
    }

    @Test func signallingAndSMPDecoders() {
        var rng = SplitMix64(seed: 0x5167)
        let codes: [UInt8] = [0x01, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17]
        var decoded = 0
        for _ in 0..<5000 {
            let data = randomBytes(Int.random(in: 0...14, using: &rng), &rng)
            let code = Bool.random(using: &rng) ? codes.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            let length = Int.random(in: 0..<4, using: &rng) == 0 ? UInt16.random(in: 0...20, using: &rng) : UInt16(data.count)
            let bytes = [code, UInt8.random(in: 0...255, using: &rng), UInt8(length & 0xFF), UInt8(length >> 8)] + data
            let cut = Int.random(in: 0..<10, using: &rng) == 0 ? Array(bytes.prefix(Int.random(in: 0...4, using: &rng))) : bytes
            if let pdu = try? LESignallingPDU(decoding: cut) {
                decoded += 1
                #expect(pdu.encoded() == cut)
                if let answer = LESignallingPDU.peripheralResponse(to: pdu) {
                    #expect(answer.identifier == pdu.identifier)
                    #expect((try? LESignallingPDU(decoding: answer.encoded())) == answer)
                }
            }
            if let smp = try? SMPPDU(decoding: data) { #expect(smp.encoded() == data) }
            _ = SMPPDU.responseWithoutPairingSupport(to: data)
            _ = try? L2CAPBasicFrame(decoding: cut)
        }
        #expect(decoded > 500)
    }
}
