import Testing
@testable import GattCore
import GattTestFixtures

/// Random, truncated and mutated PDUs (seeded, reproducible): the server never
/// traps, answers every request with exactly one well-formed response of the
/// paired opcode (or an Error Response naming the request), and never answers
/// commands.
@Suite struct ATTServerFuzzTests {
    static let seeds: [[UInt8]] = [
        [0x02, 0x17, 0x00], [0x04, 0x01, 0x00, 0xFF, 0xFF], [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0xA0, 0xAA],
        [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28], [0x08, 0x01, 0x00, 0xFF, 0xFF] + ATTFixture.uartRX.littleEndian128,
        [0x0A, 0x10, 0x00], [0x0A, 0x1D, 0x00], [0x0C, 0x19, 0x00, 0x10, 0x00], [0x0E, 0x10, 0x00, 0x03, 0x00],
        [0x20, 0x10, 0x00, 0x19, 0x00], [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], [0x12, 0x13, 0x00, 0x03, 0x00],
        [0x12, 0x1D, 0x00, 0x01], [0x12, 0x0B, 0x00, 0x04], [0x52, 0x10, 0x00, 0x01], [0x52, 0x1D, 0x00, 0x01],
        [0xD2, 0x20, 0x00, 0x01] + [UInt8](repeating: 0x5A, count: 12), [0x16, 0x19, 0x00, 0x00, 0x00, 0x01, 0x02],
        [0x16, 0x1D, 0x00, 0x00, 0x00, 0x01], [0x18, 0x01], [0x18, 0x00], [0x1E],
    ]

    static func generate(_ rng: inout SplitMix64) -> [UInt8] {
        var pdu = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:  // random bytes
            return (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        case 1:  // valid layout, random handles/offsets
            for i in 1..<min(pdu.count, 5) where Bool.random(using: &rng) {
                pdu[i] = i % 2 == 1 ? UInt8.random(in: 0...0x2C, using: &rng) : UInt8.random(in: 0...1, using: &rng)
            }
            return pdu
        case 2:  // truncated
            return Array(pdu.prefix(Int.random(in: 0...pdu.count, using: &rng)))
        default:  // mutated and/or extended
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !pdu.isEmpty {
                pdu[Int.random(in: 0..<pdu.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Bool.random(using: &rng) {
                pdu += (0..<Int.random(in: 0...30, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            return pdu
        }
    }

    @Test func twentyThousandPDUs() throws {
        var rng = SplitMix64(seed: 0x6761_7474_6400_0001)
        var server = ATTServer(database: ATTFixture.database())
        let c = ConnectionID(1)
        server.connect(c, security: .low)
        server.setCSRK(c, key: (0..<16).map { UInt8($0) })
        var failures: [String] = []
        var answered = 0
        for i in 0..<20_000 {
            server.deferredAccessAvailable = i % 3 != 0
            if i % 1000 == 999 { server.setSecurity(c, i % 2000 == 999 ? .medium : .low) }
            let pdu = Self.generate(&rng)
            let now = Duration.milliseconds(i)
            var outputs = server.receive(pdu, from: .fixed(c), now: now)
            // Deferred accesses are answered at once, at random.
            var k = 0
            while k < outputs.count {
                if case .event(let e) = outputs[k] {
                    var rid: PendingRequestID?
                    if case .deferredAccess(let id, _, _) = e { rid = id }
                    if let rid {
                        let result: Result<[UInt8], ATTError> = Bool.random(using: &rng)
                            ? .success((0..<Int.random(in: 0...40, using: &rng)).map { UInt8($0) }) : .failure(.unlikelyError)
                        outputs += try server.respond(to: rid, result: result, now: now)
                    }
                }
                k += 1
            }
            var responses: [[UInt8]] = []
            while let out = server.dequeueOutgoing(for: .fixed(c)) { responses.append(out.pdu) }
            let mtu = server.mtu(for: c) ?? 0

            guard let first = pdu.first, !ATTOpcode.isCommand(first), first != ATTOpcode.handleValueConfirmation.rawValue else {
                if !responses.isEmpty { failures.append("#\(i) \(pdu): answered \(responses)") }
                continue
            }
            guard responses.count == 1 else {
                failures.append("#\(i) \(pdu): \(responses.count) responses")
                continue
            }
            answered += 1
            let r = responses[0]
            if r.count > mtu { failures.append("#\(i) \(pdu): response longer than MTU \(mtu)") }
            do {
                let decoded = try ATTPDU(decoding: r)
                if case .errorResponse(let request, _, _) = decoded {
                    if request != first { failures.append("#\(i) \(pdu): error names \(request)") }
                } else if ATTOpcode(rawValue: first)?.responseOpcode != decoded.opcode {
                    failures.append("#\(i) \(pdu): answered with \(decoded.opcode)")
                }
            } catch {
                failures.append("#\(i) \(pdu): malformed response \(r)")
            }
            if failures.count > 20 { break }
        }
        #expect(failures.isEmpty, "\(failures.prefix(20))")
        #expect(answered > 8_000)
        #expect(server.nextDeadline == nil)
    }
}
