import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// ACL data: host flow control with Number Of Completed Packets (Vol 4 Part E
/// §4.1.1), fragmentation and recombination (Vol 3 Part A §7.2), notify backpressure.
@Suite struct HostACLTests {
    /// 2 LE buffers of 27 bytes, connection 0x40 up, logs cleared.
    static func connected(att: ATTServerConfiguration = ATTServerConfiguration()) -> HostHarness {
        var h = HostHarness(att: att)
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        return h
    }

    static func acl(_ handle: UInt16, _ pb: ACLPacketBoundary, _ data: [UInt8]) -> H4Packet {
        H4Packet(acl: HCIACLPacket(handle: handle, packetBoundary: pb, data: data))
    }

    @Test func longResponseIsFragmentedAndPacedByCompletedPackets() {
        var h = Self.connected()
        h.receive([0x02, 0x05, 0x02], handle: 0x40)  // Exchange MTU 517
        #expect(h.sent == [Self.acl(0x40, .firstNonFlushable, [0x03, 0x00, 0x04, 0x00, 0x03, 0x05, 0x02])])
        h.completed([(0x40, 1)])
        h.clearLogs()

        h.receive([0x0A, 0x1B, 0x00], handle: 0x40)  // Read the 100-byte value
        let frame = [0x65, 0x00, 0x04, 0x00, 0x0B] + (0..<100).map { UInt8($0) }
        // Only two packets: the controller has two buffers.
        #expect(h.sent == [Self.acl(0x40, .firstNonFlushable, Array(frame[0..<27])), Self.acl(0x40, .continuing, Array(frame[27..<54]))])
        // Nothing else frees a buffer.
        h.receive([0x0A, 0x03, 0x00], handle: 0x40)
        h.advance(to: .seconds(1))
        #expect(h.sent.count == 2)
        h.completed([(0x40, 1)])
        #expect(h.sent.count == 3)
        #expect(h.sent.last == Self.acl(0x40, .continuing, Array(frame[54..<81])))
        h.completed([(0x40, 2)])
        // The last fragment, then the next response (a new frame, PB 0b00).
        #expect(h.sent.count == 5)
        #expect(h.sent[3] == Self.acl(0x40, .continuing, Array(frame[81...])))
        #expect(h.sent[4] == Self.acl(0x40, .firstNonFlushable, [0x06, 0x00, 0x04, 0x00, 0x0B] + Array("gattd".utf8)))
        #expect(h.sentACL.allSatisfy { $0.data.count <= 27 })
        #expect(h.sentPayloads(handle: 0x40) == [Array(frame[4...]), [0x0B] + Array("gattd".utf8)])
    }

    @Test func completedPacketsBeyondWhatIsInFlightGrantNoExtraCredits() {
        var h = Self.connected()
        h.receive([0x02, 0x05, 0x02], handle: 0x40)
        h.completed([(0x40, 1)])
        h.clearLogs()
        // Bogus counts: unknown handle, more than in flight.
        h.completed([(0x0123, 5), (0x40, 9)])
        for _ in 0..<3 { h.receive([0x0A, 0x1B, 0x00], handle: 0x40) }  // 3 × 4 fragments
        #expect(h.sent.count == 2)
        h.completed([(0x40, 9)])
        #expect(h.sent.count == 4)
    }

    @Test func creditsInFlightComeBackWhenTheConnectionCloses() {
        var h = Self.connected()
        h.receive([0x02, 0x05, 0x02], handle: 0x40)
        h.completed([(0x40, 1)])
        h.receive([0x0A, 0x1B, 0x00], handle: 0x40)  // 2 of 4 fragments in flight
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        h.clearLogs()
        h.receive([0x02, 0x17, 0x00], handle: 0x41)
        #expect(h.sent.isEmpty)  // no buffer free
        h.disconnected(0x40)
        // The closed connection's buffers are free again (its packets were flushed);
        // its unsent fragments are dropped.
        #expect(h.sentACL == [HCIACLPacket(handle: 0x41, packetBoundary: .firstNonFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x03, 0x05, 0x02])])
        // A late completion for the closed handle adds nothing.
        h.clearLogs()
        h.completed([(0x40, 2)])
        for _ in 0..<2 { h.receive([0x0A, 0x03, 0x00], handle: 0x41) }
        #expect(h.sentACL.count == 1)
    }

    @Test func notificationsToTwoConnectionsAreInterleaved() {
        var h = Self.connected()
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        for c: UInt16 in [0x40, 0x41] {
            h.receive([0x02, 0x64, 0x00], handle: c)  // MTU 100
            h.completed([(c, 1)])
            h.receive([0x12, 0x15, 0x00, 0x01, 0x00], handle: c)  // subscribe to notifications
            h.completed([(c, 1)])
        }
        h.clearLogs()
        let value = (0..<60).map { UInt8($0) }
        let (result, outputs) = h.host.notify(characteristic: ATTFixture.notify, value: value, now: h.now)
        h.take(outputs)
        #expect(result == .queued(2))
        // Each notification is 3 fragments (4 + 3 + 60 = 67 bytes); one buffer each.
        #expect(h.sentACL.map(\.handle).sorted() == [0x40, 0x41])
        var order = h.sentACL.map(\.handle)
        for _ in 0..<10 {
            let before = h.sentACL.count
            h.completed(h.sentACL.suffix(2).map { ($0.handle, 1) })
            if h.sentACL.count == before { break }
        }
        order = h.sentACL.map(\.handle)
        #expect(order.count == 6)
        #expect(zip(order, order.dropFirst()).allSatisfy { $0 != $1 })  // strictly alternating
        let notification = [0x1B, 0x14, 0x00] + value
        #expect(h.sentPayloads(handle: 0x40) == [notification])
        #expect(h.sentPayloads(handle: 0x41) == [notification])
    }

    @Test func notifyIsBusyWhileNoBufferIsFreeAndReadyFollows() {
        var config = ATTServerConfiguration()
        config.maxQueuedUpdates = 2
        var h = Self.connected(att: config)
        h.receive([0x12, 0x15, 0x00, 0x01, 0x00], handle: 0x40)
        h.completed([(0x40, 1)])
        h.clearLogs()
        func notify(_ v: UInt8) -> NotifyResult {
            let (r, out) = h.host.notify(characteristic: ATTFixture.notify, value: [v], now: h.now)
            h.take(out)
            return r
        }
        #expect(notify(1) == .queued(1))
        #expect(notify(2) == .queued(1))
        #expect(h.sentPayloads(handle: 0x40) == [[0x1B, 0x14, 0x00, 1], [0x1B, 0x14, 0x00, 2]])
        // Both buffers in use: the ATT queue fills.
        #expect(notify(3) == .queued(1))
        #expect(notify(4) == .queued(1))
        #expect(notify(5) == .busy)
        #expect(h.sentACL.count == 2)
        #expect(h.attEvents.isEmpty)
        h.completed([(0x40, 1)])
        #expect(h.sentPayloads(handle: 0x40).last == [0x1B, 0x14, 0x00, 3])
        #expect(h.attEvents == [.ready])
        #expect(notify(5) == .queued(1))
        h.completed([(0x40, 2)])
        #expect(h.sentPayloads(handle: 0x40).suffix(2) == [[0x1B, 0x14, 0x00, 4], [0x1B, 0x14, 0x00, 5]])
        #expect(h.attEvents == [.ready])
    }

    // MARK: Reassembly

    @Test func requestSplitOverSeveralFragmentsIsAnswered() {
        var h = Self.connected()
        let value: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        let frame = [0x0D, 0x00, 0x04, 0x00, 0x12, 0x12, 0x00] + value  // Write Request 0x0012
        h.deliver(Self.acl(0x40, .firstFlushable, Array(frame[0..<2])))  // half an L2CAP header
        h.deliver(Self.acl(0x40, .continuing, Array(frame[2..<7])))
        #expect(h.sent.isEmpty)
        h.deliver(Self.acl(0x40, .continuing, Array(frame[7...])))
        #expect(h.sent == [Self.acl(0x40, .firstNonFlushable, [0x01, 0x00, 0x04, 0x00, 0x13])])
        #expect(h.attEvents == [.written(ConnectionID(0x40), characteristic: ATTFixture.rw, value: value)])
        #expect(h.warnings.isEmpty)
    }

    @Test func malformedACLIsDroppedWithAWarning() {
        var h = Self.connected()
        h.deliver(Self.acl(0x40, .continuing, [1, 2, 3]))
        #expect(h.warnings == ["connection 64: ACL continuation fragment (3 bytes) without a first fragment; dropped"])
        h.clearLogs()
        h.deliver(Self.acl(0x0123, .firstFlushable, [0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00]))
        #expect(h.warnings == ["ACL data for unknown connection handle 291 dropped"])
        h.clearLogs()
        h.deliver(H4Packet(type: .acl, body: [0x40, 0x20, 0x05, 0x00, 0x01]))  // length says 5, 1 present
        h.deliver(H4Packet(type: .acl, body: [0x40]))
        #expect(h.warnings.count == 2)
        #expect(h.warnings.allSatisfy { $0.hasPrefix("malformed ACL packet dropped") })
        h.clearLogs()
        h.deliver(Self.acl(0x40, .completeFlushable, [0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00]))
        h.receive([0x01, 0x02], channel: L2CAPChannelID(0x0040), handle: 0x40)
        #expect(h.warnings == [
            "connection 64: ACL packet boundary flag 0b11 is not valid on LE; dropped",
            "connection 64: K-frame for CID 0x0040, which is not open, dropped",
        ])
        // A start fragment abandons an incomplete frame; the new one is answered.
        h.clearLogs()
        h.deliver(Self.acl(0x40, .firstFlushable, [0x03, 0x00, 0x04]))
        h.receive([0x02, 0x17, 0x00], handle: 0x40)
        #expect(h.warnings == ["connection 64: new L2CAP frame started before the previous one completed; 3 bytes dropped"])
        #expect(h.sentPayloads(handle: 0x40) == [[0x03, 0x05, 0x02]])
        #expect(h.host.connections.count == 1)
        #expect(h.fatals.isEmpty)
    }

    @Test func unexpectedPacketTypesAreDropped() {
        var h = Self.connected()
        h.deliver(H4Packet(type: .command, body: [0x03, 0x0C, 0x00]))
        h.deliver(H4Packet(type: .sco, body: [0x40, 0x00, 0x00]))
        #expect(h.warnings == ["unexpected command packet from the controller dropped", "unexpected SCO packet from the controller dropped"])
        #expect(h.sent.isEmpty)
    }
}
