import Testing
@testable import GattCore
import GattTestFixtures

/// Notifications, indications, backpressure and the indication transaction timeout
/// (GATT test specification GAN/GAI cases where one applies).
@Suite struct ATTServerUpdateTests {
    static let t0 = Duration.zero

    @Test func GAN_SR_BV_01_notifyAndIndicateSubscribers() {
        var h = ATTHarness(connections: 2)
        h.server.connect(ConnectionID(3), security: .low)
        h.subscribe(0x15, 0x01)
        h.subscribe(0x15, 0x02, from: h.c2)
        let (result, outputs) = h.server.notify(characteristic: ATTFixture.notify, value: [1, 2, 3], now: Self.t0)
        #expect(result == .queued(2))
        #expect(outputs == [.outgoingAvailable(.fixed(h.c1)), .outgoingAvailable(.fixed(h.c2))])
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00, 1, 2, 3]])
        #expect(h.drain(h.c2) == [[0x1D, 0x14, 0x00, 1, 2, 3]])
        #expect(h.drain(ConnectionID(3)) == [])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.notify) == [1, 2, 3])
    }

    /// Who receives an update, and how, is one rule for `notify` and `notifyMultiple`
    /// (`ATTClient.updateKind`): with both CCCD bits set, an indication; an indication that
    /// needs encryption the link lacks is not sent as a notification instead (nothing is).
    @Test func notifyAndNotifyMultipleChooseTheSamePDU() {
        let svc = ServiceDefinition(uuid: 0xBBB0, characteristics: [
            CharacteristicDefinition(uuid: 0xBBB1, properties: [.read, .notify, .indicate], value: [1]),
            CharacteristicDefinition(uuid: 0xBBB2, properties: [.read, .notify, .indicate, .indicateEncryptionRequired], value: [1]),
        ])
        let plain = CharacteristicIndex(GATTDatabase.BuiltIn.count), secure = CharacteristicIndex(GATTDatabase.BuiltIn.count + 1)
        for multiple in [false, true] {
            var server = ATTServer(database: GATTDatabase(deviceName: "x", services: [svc]))
            let c = ConnectionID(9)
            server.connect(c, security: .low)
            server.setClientConfiguration(for: c, characteristic: plain, 0x0003)
            server.setClientConfiguration(for: c, characteristic: secure, 0x0003)
            let h = server.database[plain].valueHandle.rawValue
            let sent = multiple ? server.notifyMultiple([(plain, [7])], now: Self.t0).result : server.notify(characteristic: plain, value: [7], now: Self.t0).result
            #expect(sent == .queued(1))
            #expect(server.dequeueOutgoing(for: .fixed(c))?.pdu == [0x1D, UInt8(h & 0xFF), UInt8(h >> 8), 7], "multiple: \(multiple)")
            let refused = multiple ? server.notifyMultiple([(secure, [7])], now: Self.t0).result : server.notify(characteristic: secure, value: [7], now: Self.t0).result
            #expect(refused == .queued(0), "multiple: \(multiple)")
            #expect(server.dequeueOutgoing(for: .fixed(c)) == nil)
        }
    }

    @Test func notifyResults() {
        var h = ATTHarness()
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [9], now: Self.t0).result == .queued(0))
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.notify) == [9])
        #expect(h.server.notify(characteristic: ATTFixture.rw, value: [1], now: Self.t0).result == .notNotifiable)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [UInt8](repeating: 0, count: 513), now: Self.t0).result == .valueTooLong)
        #expect(h.server.notify(characteristic: CharacteristicIndex(99), value: [], now: Self.t0).result == .unknownCharacteristic)
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.notify) == [9])
        let set = h.server.setValue(characteristic: ATTFixture.rw, value: [7, 7])
        let tooLong = h.server.setValue(characteristic: ATTFixture.rw, value: [UInt8](repeating: 0, count: 21))
        #expect(set && !tooLong)
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x07, 0x07])
    }

    @Test func onlyTargetsOneConnection() {
        var h = ATTHarness(connections: 2)
        h.subscribe(0x15, 0x01)
        h.subscribe(0x15, 0x01, from: h.c2)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [5], only: h.c2, now: Self.t0).result == .queued(1))
        #expect(h.drain(h.c1) == [])
        #expect(h.drain(h.c2) == [[0x1B, 0x14, 0x00, 5]])
    }

    @Test func GAN_SR_BV_02_truncatedToMTUMinus3AndReadableWithBlob() {
        var h = ATTHarness()
        h.subscribe(0x15, 0x01)
        let value = (0..<30).map { UInt8($0) }
        _ = h.server.notify(characteristic: ATTFixture.notify, value: value, now: Self.t0)
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00] + value[0..<20]])
        #expect(h.request([0x0C, 0x14, 0x00, 0x16, 0x00]) == [0x0D] + value[22..<30])
    }

    @Test func busyChangesNothingAndReadyFiresOnceAfterDraining() {
        var cfg = ATTServerConfiguration()
        cfg.maxQueuedUpdates = 2
        var h = ATTHarness(configuration: cfg, connections: 2)
        h.subscribe(0x15, 0x01)
        h.subscribe(0x15, 0x01, from: h.c2)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [1], now: Self.t0).result == .queued(2))
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [2], now: Self.t0).result == .queued(2))
        let busy = h.server.notify(characteristic: ATTFixture.notify, value: [3], now: Self.t0)
        #expect(busy.result == .busy && busy.outputs == [])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.notify) == [2])
        // Responses still enter a full queue.
        _ = h.server.receive([0x0A, 0x14, 0x00], from: .fixed(h.c1), now: Self.t0)
        // Room on c1 only: not ready yet.
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.outputs == [])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.outputs == [])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.pdu == [0x0B, 0x02])
        // The first pull that gives c2 room fires `.ready`, once.
        let first = h.server.dequeueOutgoing(for: .fixed(h.c2))
        #expect(first?.pdu == [0x1B, 0x14, 0x00, 1])
        #expect(first?.outputs == [.event(.ready)])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c2))?.outputs == [])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c2)) == nil)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [3], now: Self.t0).result == .queued(2))
    }

    @Test func readyWaitsUntilTheQueueIsHalfEmpty() {
        var cfg = ATTServerConfiguration()
        cfg.maxQueuedUpdates = 4
        var h = ATTHarness(configuration: cfg)
        h.subscribe(0x15, 0x01)
        for v: UInt8 in 1...4 {
            #expect(h.server.notify(characteristic: ATTFixture.notify, value: [v], now: Self.t0).result == .queued(1))
        }
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [5], now: Self.t0).result == .busy)
        // 3 queued: room for one, but not ready yet (the low-water mark is 4 / 2 = 2).
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.outputs == [])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.outputs == [.event(.ready)])
        #expect(h.server.dequeueOutgoing(for: .fixed(h.c1))?.outputs == [])
    }

    @Test func readyAfterBusyConnectionDisconnects() {
        var cfg = ATTServerConfiguration()
        cfg.maxQueuedUpdates = 1
        var h = ATTHarness(configuration: cfg)
        h.subscribe(0x15, 0x01)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: Self.t0)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [2], now: Self.t0).result == .busy)
        #expect(h.server.disconnect(h.c1) == [.event(.ready)])
    }

    @Test func GAI_SR_BV_01_indicationsQueueBehindOutstandingOne() {
        var h = ATTHarness()
        h.subscribe(0x15, 0x02)
        for v: UInt8 in 1...3 {
            #expect(h.server.notify(characteristic: ATTFixture.notify, value: [v], now: Self.t0).result == .queued(1))
        }
        #expect(h.drain(h.c1) == [[0x1D, 0x14, 0x00, 1]])
        #expect(h.send([0x1E], now: .seconds(1)) == [[0x1D, 0x14, 0x00, 2]])
        #expect(h.events == [.indicationConfirmed(h.c1, characteristic: ATTFixture.notify)])
        #expect(h.send([0x1E], now: .seconds(2)) == [[0x1D, 0x14, 0x00, 3]])
        #expect(h.send([0x1E], now: .seconds(3)) == [])
        #expect(h.events == [.indicationConfirmed(h.c1, characteristic: ATTFixture.notify)])
        // Nothing outstanding: a stray confirmation is ignored.
        #expect(h.send([0x1E], now: .seconds(4)) == [])
        #expect(h.events == [])
        #expect(h.server.nextDeadline == nil)
    }

    @Test func waitingIndicationsCountAgainstTheLimit() {
        var cfg = ATTServerConfiguration()
        cfg.maxQueuedUpdates = 2
        var h = ATTHarness(configuration: cfg)
        h.subscribe(0x15, 0x02)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: Self.t0)
        _ = h.drain(h.c1)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [2], now: Self.t0)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [3], now: Self.t0)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [4], now: Self.t0).result == .busy)
        // Confirmation moves one waiting indication into the queue (still 2 counted).
        #expect(h.server.receive([0x1E], from: .fixed(h.c1), now: .seconds(1)).contains(.event(.indicationConfirmed(h.c1, characteristic: ATTFixture.notify))))
        let pulled = h.server.dequeueOutgoing(for: .fixed(h.c1))
        #expect(pulled?.pdu == [0x1D, 0x14, 0x00, 2])
        #expect(pulled?.outputs == [.event(.ready)])
    }

    @Test func GAI_SR_BI_01_indicationTimeoutClosesBearer() {
        var h = ATTHarness(connections: 2)
        h.subscribe(0x15, 0x02)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: .seconds(10))
        #expect(h.server.nextDeadline == .seconds(40))
        #expect(h.server.tick(now: .seconds(39)) == [])
        #expect(h.server.tick(now: .seconds(40)) == [
            .event(.indicationTimedOut(h.c1, characteristic: ATTFixture.notify)),
            .closeBearer(.fixed(h.c1), .transactionTimeout),
        ])
        #expect(h.server.connections == [h.c2])
        #expect(h.server.receive([0x0A, 0x03, 0x00], from: .fixed(h.c1), now: .seconds(41)) == [])
        #expect(h.server.nextDeadline == nil)
    }

    @Test func notifyMultipleUsesMultipleHandleValueNotification() {
        var h = ATTHarness(connections: 2)
        for c in [h.c1, h.c2] {
            h.subscribe(0x15, 0x01, from: c)
            h.subscribe(0x20, 0x01, from: c)
        }
        _ = h.send([0x12, 0x0B, 0x00, 0x04])  // c1: Multiple Handle Value Notifications
        let r = h.server.notifyMultiple([(ATTFixture.notify, [0xAA]), (ATTFixture.control, [0xBB, 0xCC])], now: Self.t0)
        #expect(r.result == .queued(2))  // clients reached
        #expect(h.drain(h.c1) == [[0x23, 0x14, 0x00, 0x01, 0x00, 0xAA, 0x1F, 0x00, 0x02, 0x00, 0xBB, 0xCC]])
        #expect(h.drain(h.c2) == [[0x1B, 0x14, 0x00, 0xAA], [0x1B, 0x1F, 0x00, 0xBB, 0xCC]])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.control) == [0xBB, 0xCC])
    }

    @Test func restoredSubscription() {
        var h = ATTHarness()
        h.server.setClientConfiguration(for: h.c1, characteristic: ATTFixture.notifyOnly, 0x0003)
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notifyOnly) == 0x0001)
        #expect(h.server.notify(characteristic: ATTFixture.notifyOnly, value: [4], now: Self.t0).result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1B, 0x27, 0x00, 0x04]])
    }

    @Test func disabledSubscriptionStopsUpdates() {
        var h = ATTHarness()
        h.subscribe(0x15, 0x01)
        h.subscribe(0x15, 0x00)
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: ATTFixture.notify, notify: false, indicate: false)])
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [1], now: Self.t0).result == .queued(0))
    }
}

/// `.deferred` values (reads and writes handed out as deferred accesses), and the sequential protocol.
@Suite struct ATTServerDeferredAccessTests {
    func pendingID(_ events: [ATTServerEvent]) -> PendingRequestID? {
        for e in events {
            if case .deferredAccess(let id, _, _) = e { return id }
        }
        return nil
    }

    @Test func readIsDeferredAndAnsweredLater() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        #expect(h.send([0x0A, 0x1F, 0x00]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, .read(characteristic: ATTFixture.control, offset: 0))])
        let out = try h.server.respond(to: PendingRequestID(1), result: .success([1, 2, 3]), now: .seconds(1))
        #expect(out == [.outgoingAvailable(.fixed(h.c1))])
        #expect(h.drain(h.c1) == [[0x0B, 1, 2, 3]])
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .seconds(1)) }
        // Read Blob carries the offset; errors go back with the handle.
        _ = h.send([0x0C, 0x1F, 0x00, 0x05, 0x00])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(2), h.c1, .read(characteristic: ATTFixture.control, offset: 5))])
        _ = try h.server.respond(to: PendingRequestID(2), result: .failure(.invalidOffset), now: .seconds(1))
        #expect(h.drain(h.c1) == [[0x01, 0x0C, 0x1F, 0x00, 0x07]])
    }

    @Test func withoutDeferredAccessReadsStoredValueAndRejectsWrites() {
        var h = ATTHarness()
        #expect(h.request([0x0A, 0x1F, 0x00]) == [0x0B, 0xC0])
        #expect(h.request([0x12, 0x1F, 0x00, 0x01]) == [0x01, 0x12, 0x1F, 0x00, 0xFC])
        #expect(h.request([0x16, 0x1F, 0x00, 0x00, 0x00, 0x01]) == [0x01, 0x16, 0x1F, 0x00, 0xFC])
        #expect(h.send([0x52, 0x1F, 0x00, 0x01]) == [])
        #expect(h.events == [])
    }

    @Test func unansweredRequestTimesOutWithUnlikelyError() {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        _ = h.send([0x0A, 0x1F, 0x00], now: .seconds(100))
        #expect(h.server.nextDeadline == .seconds(105))
        #expect(h.server.tick(now: .seconds(104)) == [])
        h.events = []
        h.absorb(h.server.tick(now: .seconds(105)))
        #expect(h.events == [.requestTimedOut(id: PendingRequestID(1))])
        #expect(h.drain(h.c1) == [[0x01, 0x0A, 0x1F, 0x00, 0x0E]])
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .seconds(106)) }
    }

    @Test func laterPDUsAreHeldUntilTheAnswer() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        h.subscribe(0x15, 0x02)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: .zero)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [2], now: .zero)
        #expect(h.drain(h.c1) == [[0x1D, 0x14, 0x00, 1]])
        #expect(h.send([0x0A, 0x1F, 0x00]) == [])
        let rid = try #require(pendingID(h.events))
        #expect(h.send([0x0A, 0x12, 0x00]) == [])
        #expect(h.send([0x52, 0x12, 0x00, 0x77]) == [])
        #expect(h.events == [])
        // A confirmation is not held.
        #expect(h.send([0x1E]) == [[0x1D, 0x14, 0x00, 2]])
        #expect(h.events == [.indicationConfirmed(h.c1, characteristic: ATTFixture.notify)])
        h.events = []
        h.absorb(try h.server.respond(to: rid, result: .success([0xAB]), now: .seconds(1)))
        // Responses in request order, then the held command's effect.
        #expect(h.drain(h.c1) == [[0x0B, 0xAB], [0x0B, 0x01, 0x02]])
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.rw, value: [0x77])])
    }

    @Test func writeIsDeferred() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        #expect(h.send([0x12, 0x1F, 0x00, 0x01, 0x02]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, .write(characteristic: ATTFixture.control, value: [1, 2], offset: 0))])
        _ = try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero)
        #expect(h.drain(h.c1) == [[0x13]])
        _ = h.send([0x12, 0x1F, 0x00, 0x03])
        _ = try h.server.respond(to: PendingRequestID(2), result: .failure(.valueNotAllowed), now: .zero)
        #expect(h.drain(h.c1) == [[0x01, 0x12, 0x1F, 0x00, 0x13]])
        // Too long for max_length: answered without asking.
        h.exchangeMTU(100)
        #expect(h.request([0x12, 0x1F, 0x00] + [UInt8](repeating: 0, count: 65)) == [0x01, 0x12, 0x1F, 0x00, 0x0D])
        // Write Command: an event, no answer.
        #expect(h.send([0x52, 0x1F, 0x00, 0x09]) == [])
        #expect(h.events == [.writeCommand(h.c1, characteristic: ATTFixture.control, value: [0x09])])
    }

    @Test func longWriteIsOneDeferredWriteAtExecute() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        #expect(h.request([0x16, 0x1F, 0x00, 0x00, 0x00, 1, 2, 3]) == [0x17, 0x1F, 0x00, 0x00, 0x00, 1, 2, 3])
        #expect(h.request([0x16, 0x1F, 0x00, 0x03, 0x00, 4, 5]) == [0x17, 0x1F, 0x00, 0x03, 0x00, 4, 5])
        #expect(h.events == [])
        #expect(h.send([0x18, 0x01]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, .write(characteristic: ATTFixture.control, value: [1, 2, 3, 4, 5], offset: 0))])
        _ = try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero)
        #expect(h.drain(h.c1) == [[0x19]])
        // Parts that do not follow each other.
        _ = h.send([0x16, 0x1F, 0x00, 0x00, 0x00, 1])
        _ = h.send([0x16, 0x1F, 0x00, 0x05, 0x00, 2])
        #expect(h.request([0x18, 0x01]) == [0x01, 0x18, 0x1F, 0x00, 0x07])
    }

    @Test func reliableWriteWithDeferredAndStoredIsAllOrNothing() throws {
        let svc = ServiceDefinition(uuid: 0xBBB0, characteristics: [
            CharacteristicDefinition(uuid: 0xBBB1, properties: [.read, .write, .reliableWrite], value: [0], valueSource: .deferred),
            CharacteristicDefinition(uuid: 0xBBB2, properties: [.read, .write, .reliableWrite], value: [0]),
        ])
        var server = ATTServer(database: GATTDatabase(deviceName: "x", services: [svc]))
        server.deferredAccessAvailable = true
        let c = ConnectionID(4)
        server.connect(c, security: .low)
        // Values 0x0012 (deferred) and 0x0015 (stored); each answer pulled before the next
        // request, as a client waits for it (§3.3.2).
        var pdus: [[UInt8]] = []
        func pull() { while let p = server.dequeueOutgoing(for: .fixed(c)) { pdus.append(p.pdu) } }
        _ = server.receive([0x16, 0x12, 0x00, 0x00, 0x00, 0x01], from: .fixed(c), now: .zero)
        pull()
        _ = server.receive([0x16, 0x15, 0x00, 0x00, 0x00, 0x02], from: .fixed(c), now: .zero)
        pull()
        let out = server.receive([0x18, 0x01], from: .fixed(c), now: .zero)
        #expect(out == [.event(.deferredAccess(id: PendingRequestID(1), c, .write(characteristic: CharacteristicIndex(6), value: [0x01], offset: 0)))])
        _ = try server.respond(to: PendingRequestID(1), result: .failure(.writeRequestRejected), now: .zero)
        #expect(server.database.value(ofCharacteristic: CharacteristicIndex(7)) == [0])
        pull()
        #expect(pdus == [[0x17, 0x12, 0x00, 0x00, 0x00, 0x01], [0x17, 0x15, 0x00, 0x00, 0x00, 0x02], [0x01, 0x18, 0x12, 0x00, 0xFC]])
        _ = server.receive([0x16, 0x12, 0x00, 0x00, 0x00, 0x01], from: .fixed(c), now: .zero)
        pull()
        _ = server.receive([0x16, 0x15, 0x00, 0x00, 0x00, 0x02], from: .fixed(c), now: .zero)
        pull()
        _ = server.receive([0x18, 0x01], from: .fixed(c), now: .zero)
        let done = try server.respond(to: PendingRequestID(2), result: .success([]), now: .zero)
        #expect(done == [.event(.written(c, characteristic: CharacteristicIndex(7), value: [0x02])), .outgoingAvailable(.fixed(c))])
        #expect(server.database.value(ofCharacteristic: CharacteristicIndex(7)) == [0x02])
    }

    @Test func failDeferredAccessesAnswersAtOnce() {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        _ = h.send([0x12, 0x1F, 0x00, 0x01])
        _ = h.send([0x0A, 0x12, 0x00])
        h.server.deferredAccessAvailable = false
        h.absorb(h.server.failDeferredAccesses(now: .seconds(1)))
        #expect(h.events == [.requestTimedOut(id: PendingRequestID(1))])
        #expect(h.drain(h.c1) == [[0x01, 0x12, 0x1F, 0x00, 0x0E], [0x0B, 0x01, 0x02]])
    }

    @Test func disconnectForgetsDeferredAccesses() {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        _ = h.send([0x0A, 0x1F, 0x00])
        _ = h.server.disconnect(h.c1)
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero) }
        #expect(h.server.nextDeadline == nil)
    }
}
