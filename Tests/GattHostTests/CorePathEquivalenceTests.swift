import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The hot paths of issue #12 do what the general code does, byte for byte: `notify` (one
/// characteristic, `ServerInitiatedUpdates.notify`) as `notifyMultiple` of one update, the
/// scheduler's ACL packets as the plain split below then `HCIACLPacket.encoded`, and Number Of
/// Completed Packets read from its bytes as the decoded event.
@Suite struct CorePathEquivalenceTests {
    /// Two subscribers (notifications, indications), small queues: queued, busy, ready.
    @Test func notifyIsNotifyMultipleOfOneUpdate() {
        var cfg = ATTServerConfiguration()
        cfg.maxQueuedUpdates = 2
        let c1 = ConnectionID(1), c2 = ConnectionID(2)
        let cases: [[(id: ConnectionID, bits: UInt8)]] = [[], [(c1, 1)], [(c1, 1), (c2, 2)], [(c1, 3), (c2, 1)]]
        for subscriptions in cases {
            for only: ConnectionID? in [nil, ConnectionID(2)] {
                var h = ATTHarness(configuration: cfg, connections: 2)
                for (id, bits) in subscriptions { h.subscribe(0x15, bits, from: id) }
                var a = h, b = h
                for round in 0..<4 {
                    let value = [UInt8](repeating: UInt8(round), count: 5 + round * 8)
                    let ra = a.server.notify(characteristic: ATTFixture.notify, value: value, only: only, now: .seconds(round))
                    let rb = b.server.notifyMultiple([(ATTFixture.notify, value)], only: only, now: .seconds(round))
                    #expect(ra.result == rb.result)
                    #expect(ra.outputs == rb.outputs)
                    #expect(a.server.database.value(ofCharacteristic: ATTFixture.notify) == b.server.database.value(ofCharacteristic: ATTFixture.notify))
                    #expect(a.server.nextDeadline == b.server.nextDeadline)
                    if round == 2 {  // the queues drain: the same PDUs, the same `.ready`
                        for id in [h.c1, h.c2] {
                            #expect(a.drain(id) == b.drain(id))
                            #expect(a.events == b.events)
                        }
                    }
                }
            }
        }
    }

    /// The plain way: an encoded L2CAP frame cut into packets of `packetLength` bytes (at
    /// least 1), the first PB = 0b00, the others PB = 0b01 (Vol 3 Part A §7.2).
    static func split(_ frame: [UInt8], handle: UInt16, packetLength: Int) -> [HCIACLPacket] {
        let size = max(1, packetLength)
        return stride(from: 0, to: frame.count, by: size).map { start in
            HCIACLPacket(
                handle: handle, packetBoundary: start == 0 ? .firstNonFlushable : .continuing,
                data: Array(frame[start..<min(start + size, frame.count)]))
        }
    }

    @Test func schedulerPacketsAreTheFragmenterPacketsEncoded() throws {
        for length in [0, 1, 3, 4, 5, 19, 23, 27, 244, 300] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            for packetLength in [1, 2, 3, 4, 5, 8, 27, 251] {
                for channel in [L2CAPChannelID.att, .smp, .leSignalling] {
                    var kept: [H4Packet] = []
                    ACLFragmenter.fragment(payload, channel: channel, handle: 0x0ABC, packetLength: packetLength, into: &kept)
                    let packets = kept.map(\.body)
                    #expect(kept.allSatisfy { $0.type == .acl && $0.bodyCount == $0.body.count })
                    let expected = Self.split(try L2CAPBasicFrame(channelID: channel, payload: payload).encoded(), handle: 0x0ABC, packetLength: packetLength)
                    #expect(packets == expected.map { $0.encoded() }, "payload \(length), packets of \(packetLength)")
                    if 4 + length <= packetLength {
                        #expect([ACLFragmenter.onePacket(payload, channel: channel, handle: 0x0ABC).body] == packets)
                    }
                }
            }
        }
    }

    /// Malformed Number Of Completed Packets events get the decoder's warning (well-formed
    /// ones, read from their bytes, pace every fragmented response in HostACLTests).
    @Test func completedPacketsFromBytesAsDecoded() {
        var h = HostACLTests.connected()
        for body: [UInt8] in [[0x13, 0x00], [0x13, 0x01, 0x01], [0x13, 0x04, 0x01, 0x40, 0x00, 0x01], [0x13, 0x05, 0x02, 0x40, 0x00, 0x01, 0x00]] {
            h.clearLogs()
            h.deliver(H4Packet(type: .event, body: body))
            let decoded = Result { () throws(HCIDecodingError) in try HCIEvent(decoding: body) }
            guard case .failure(let error) = decoded else {
                Issue.record("\(body) decodes")
                continue
            }
            #expect(h.warnings == ["malformed HCI event dropped: \(error)"])
        }
        #expect(h.violations.isEmpty)
        #expect(h.host.host.aclInvariantViolations.isEmpty)
    }
}
