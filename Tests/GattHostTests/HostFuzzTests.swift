import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Seeded random input to a brought-up host with connections: random and
/// truncated events and ACL packets, completions, timers and notifications.
/// Nothing may trap, flow control must stay consistent, and the host must still
/// serve a fresh connection afterwards.
@Suite struct HostFuzzTests {
    /// `aclCredits + Σ inFlight` must always equal the controller's buffer count.
    /// The ACL scheduler's own counters (read directly: `@testable`).
    static func creditAccounting(_ stack: H4Stack) -> (credits: Int, inFlight: Int) {
        (stack.host.acl.credits, inFlight(stack).values.reduce(0, +))
    }

    static func inFlight(_ stack: H4Stack) -> [UInt16: Int] { stack.host.acl.inFlight }

    static func randomBytes(_ n: Int, _ rng: inout SplitMix64) -> [UInt8] {
        (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    static func randomEvent(_ rng: inout SplitMix64, handles: [UInt16]) -> H4Packet {
        let handle = handles.randomElement(using: &rng) ?? 0x40
        let status = HCIStatus([0x00, 0x00, 0x0C, 0x3B, 0x13].randomElement(using: &rng) ?? 0)
        let opcodes: [HCIOpcode] = [
            .leSetAdvertisingEnable, .leSetDataLength, .leSetPHY, .disconnect, .reset, .readBufferSize, HCIOpcode(rawValue: 0),
            .leLongTermKeyRequestNegativeReply, .leLongTermKeyRequestReply, .leSetExtendedAdvertisingEnable,
            .leSetExtendedAdvertisingParameters, .leRemoveAdvertisingSet,
        ]
        let event: HCIEvent
        switch Int.random(in: 0..<15, using: &rng) {
        case 0:
            var c = HostHarness.connectionComplete(handle: UInt16.random(in: 0x40...0x48, using: &rng), status: status)
            c.role = Bool.random(using: &rng) ? .peripheral : .central
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: event = .leMeta(.connectionComplete(c))
            case 1: event = .leMeta(.enhancedConnectionComplete(c))
            default:
                c.advertisingHandle = UInt8.random(in: 0...1, using: &rng)
                event = .leMeta(.enhancedConnectionCompleteV2(c))
            }
        case 11:
            event = .leMeta(
                .advertisingSetTerminated(
                    status: HCIStatus([0x00, 0x00, 0x3C, 0x43].randomElement(using: &rng) ?? 0), advertisingHandle: UInt8.random(in: 0...1, using: &rng),
                    connectionHandle: handle, completedExtendedAdvertisingEvents: UInt8.random(in: 0...3, using: &rng)))
        case 1: event = .disconnectionComplete(status: status, handle: handle, reason: .remoteUserTerminatedConnection)
        case 2:
            event = .numberOfCompletedPackets(
                (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    HCICompletedPackets(handle: handles.randomElement(using: &rng) ?? 0, count: UInt16.random(in: 0...4, using: &rng))
                })
        case 3:
            event = .commandComplete(
                HCICommandComplete(
                    numHCICommandPackets: UInt8.random(in: 0...2, using: &rng), opcode: opcodes.randomElement(using: &rng) ?? .reset,
                    returnParameters: randomBytes(Int.random(in: 0...4, using: &rng), &rng)))
        case 4:
            event = .commandStatus(
                status: status, numHCICommandPackets: UInt8.random(in: 0...2, using: &rng), opcode: opcodes.randomElement(using: &rng) ?? .reset)
        case 5: event = .encryptionChange(status: status, handle: handle, enabled: UInt8.random(in: 0...1, using: &rng))
        case 6: event = .leMeta(.longTermKeyRequest(handle: handle, randomNumber: 1, encryptedDiversifier: 2))
        case 7:
            event = .leMeta(
                .remoteConnectionParameterRequest(handle: handle, parameters: LEConnectionParameters(intervalMin: 6, intervalMax: 6, latency: 0, supervisionTimeout: 100)))
        case 8: event = .dataBufferOverflow(linkType: 1)
        case 9: event = .leMeta(.dataLengthChange(handle: handle, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120))
        case 10: event = .leMeta(.unknown(subevent: UInt8.random(in: 0...0x40, using: &rng), parameters: randomBytes(Int.random(in: 0...40, using: &rng), &rng)))
        default:
            // Raw bytes: a known event code with random (often wrong-length) parameters.
            let code = [0x05, 0x08, 0x0E, 0x0F, 0x13, 0x1A, 0x30, 0x3E, 0xFF].randomElement(using: &rng) ?? 0x0E
            var params = randomBytes(Int.random(in: 0...40, using: &rng), &rng)
            if code == 0x3E, !params.isEmpty { params[0] = [0x01, 0x03, 0x05, 0x06, 0x0A, 0x12, 0x29].randomElement(using: &rng) ?? 1 }
            var body = [UInt8(code), UInt8(params.count)] + params
            if Int.random(in: 0..<4, using: &rng) == 0 { body = Array(body.prefix(Int.random(in: 0...body.count, using: &rng))) }
            return H4Packet(type: .event, body: body)
        }
        return H4Packet(event: event)
    }

    static func randomACL(_ rng: inout SplitMix64, handles: [UInt16]) -> H4Packet {
        let handle = Int.random(in: 0..<8, using: &rng) == 0 ? UInt16.random(in: 0...0x0FFF, using: &rng) : (handles.randomElement(using: &rng) ?? 0x40)
        let pb = ACLPacketBoundary(rawValue: UInt8.random(in: 0...3, using: &rng)) ?? .continuing
        var data: [UInt8]
        if Bool.random(using: &rng) {
            // A plausible L2CAP frame on a fixed channel with a random or real PDU.
            let cid = [0x0004, 0x0005, 0x0006, 0x0040].randomElement(using: &rng) ?? 4
            let pdus: [[UInt8]] = [
                [0x02, 0x17, 0x00], [0x0A, 0x19, 0x00], [0x12, 0x13, 0x00, 0x03, 0x00], [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28],
                [0x12, 0x01, 0x08, 0x00, 6, 0, 12, 0, 0, 0, 200, 0], [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07],
            ]
            let payload = Bool.random(using: &rng) ? (pdus.randomElement(using: &rng) ?? []) : randomBytes(Int.random(in: 0...60, using: &rng), &rng)
            let declared = Int.random(in: 0..<5, using: &rng) == 0 ? UInt16.random(in: 0...200, using: &rng) : UInt16(payload.count)
            data = hostLE16(declared) + hostLE16(UInt16(cid)) + payload
            if Int.random(in: 0..<3, using: &rng) == 0 { data = Array(data.prefix(Int.random(in: 0...data.count, using: &rng))) }
        } else {
            data = randomBytes(Int.random(in: 0...40, using: &rng), &rng)
        }
        var body = HCIACLPacket(handle: handle, packetBoundary: pb, data: data).encoded()
        if Int.random(in: 0..<6, using: &rng) == 0 { body = Array(body.prefix(Int.random(in: 0...body.count, using: &rng))) }
        return H4Packet(type: .acl, body: body)
    }

    /// Seeds, on a legacy and on a Bluetooth 5 (extended advertising) controller.
    static let runs: [(seed: UInt64, extended: Bool)] = [0x1, 0xB1E, 0x5EED, 0xC0FFEE].flatMap { [($0, false), ($0, true)] }

    @Test(arguments: runs)
    func randomInputNeverTraps(seed: UInt64, extended: Bool) {
        var rng = SplitMix64(seed: seed)
        // Even seeds run with the Security Manager on (SMP frames reach a responder per link).
        var configuration = HostConfiguration.test(maxConnections: 4)
        if seed % 2 == 0 { configuration.security = SecurityManagerConfiguration() }
        var h = HostHarness(configuration: configuration, controller: extended ? .extended : FakeController())
        h.bringUp()
        h.connect(0x40)
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        for c: UInt16 in [0x40, 0x41] { h.receive([0x12, 0x13, 0x00, 0x01, 0x00], handle: c) }
        for step in 0..<2500 {
            let handles = h.host.connections.keys.sorted() + [0x40, 0x41]
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4: h.deliver(Self.randomEvent(&rng, handles: handles))
            case 4..<8: h.deliver(Self.randomACL(&rng, handles: handles))
            case 8:
                let (_, out) = h.host.notify(characteristic: ATTFixture.notify, value: Self.randomBytes(Int.random(in: 0...80, using: &rng), &rng), now: h.now)
                h.take(out)
            case 9 where Bool.random(using: &rng):
                // The controller transmits everything in flight.
                h.completed(Self.inFlight(h.host).filter { $0.value > 0 }.map { ($0.key, UInt16($0.value)) })
            default: h.advance(to: h.now + .milliseconds(Int.random(in: 0...3000, using: &rng)))
            }
            let (credits, inFlight) = Self.creditAccounting(h.host)
            if credits + inFlight != 2 || credits < 0 || !h.host.host.aclInvariantViolations.isEmpty {
                Issue.record("seed \(seed) step \(step): credits \(credits) + in flight \(inFlight) != 2; \(h.host.host.aclInvariantViolations)")
                return
            }
        }
        // One kind of advertising commands, the one the controller was given at bring-up (§3.1.1).
        #expect(AdvertisingCommandKind.violations(h.sentOpcodes).isEmpty)
        #expect(Set(h.sentOpcodes.compactMap(AdvertisingCommandKind.init)) == [extended ? .extended : .legacy])
        // Every packet the host sent is well-formed and within the controller's limits.
        for p in h.sent {
            switch p.type {
            case .command: #expect(FakeController.parse(p).map { $0.parameters.count == Int(p.body[2]) } == true)
            case .acl: #expect((try? HCIACLPacket(decoding: p.body)).map { $0.data.count <= 27 && $0.packetBoundary.rawValue <= 1 } == true)
            default: Issue.record("host sent a \(p.type) packet")
            }
        }
        // Still alive: after everyone leaves, a new central is served.
        guard !h.host.hasFailed else { return }
        for c in h.host.connections.keys.sorted() { h.disconnected(c) }
        h.advance(to: h.now + .seconds(60))  // time out whatever command the fuzz left unanswered
        guard !h.host.hasFailed else { return }
        h.clearLogs()
        h.connect(0x0ABC)
        h.receive([0x02, 0x17, 0x00], handle: 0x0ABC)
        #expect(h.sentPayloads(handle: 0x0ABC) == [[0x03, 0x05, 0x02]])
    }
}
