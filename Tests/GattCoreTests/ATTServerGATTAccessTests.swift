import GattCore
import GattTestFixtures
import Testing

/// GATT-level access, for a back end that runs ATT itself (bluetoothd): the rules of the PDU
/// path without PDUs. Reads from an offset, writes at one, permissions, deferred accesses,
/// a persisted write acknowledged only after its commit, timeouts, and updates for the
/// subscribers the back end keeps.
@Suite struct ATTServerGATTAccessTests {
    let a1 = GATTAccessID(1), a2 = GATTAccessID(2)

    private func access(_ h: inout ATTHarness, _ access: GATTAccess, _ id: GATTAccessID, now: Duration = .zero) -> Result<[UInt8], ATTError>? {
        h.events = []
        h.gattAnswers = []
        h.absorb(h.server.access(access, id: id, from: h.c1, now: now))
        #expect(h.gattAnswers.count <= 1)
        guard let (answered, result) = h.gattAnswers.first else { return nil }
        #expect(answered == id)
        return result
    }

    private func handle(_ c: CharacteristicIndex, _ h: ATTHarness) -> AttributeHandle { h.server.database[c].valueHandle }

    @Test func readsFromAnOffset() {
        var h = ATTHarness()
        let long = handle(ATTFixture.long, h)
        #expect(access(&h, .read(long, offset: 0), a1) == .success((0..<100).map { UInt8($0) }))  // whole, not cut to an MTU
        #expect(access(&h, .read(long, offset: 98), a1) == .success([98, 99]))
        #expect(access(&h, .read(long, offset: 100), a1) == .success([]))
        #expect(access(&h, .read(long, offset: 101), a1) == .failure(.invalidOffset))
        #expect(access(&h, .read(AttributeHandle(0x0100), offset: 0), a1) == .failure(.invalidHandle))
        #expect(access(&h, .read(handle(ATTFixture.noread, h), offset: 0), a1) == .failure(.readNotPermitted))
    }

    @Test func securityIsTheBackEnds() {
        // bluetoothd checked the link against the flags before asking: an encrypted
        // characteristic is served on what the core knows as an unencrypted link.
        var h = ATTHarness()
        let secure = handle(ATTFixture.secure, h)
        #expect(access(&h, .read(secure, offset: 0), a1) == .success([0x55]))
        // The rules that are not security still hold (no read permission at all).
        #expect(access(&h, .read(handle(ATTFixture.noread, h), offset: 0), a1) == .failure(.readNotPermitted))
        #expect(access(&h, .write(secure, [0x66], offset: 0, withResponse: true), a1) == .success([]))
        #expect(access(&h, .read(secure, offset: 0), a1) == .success([0x66]))
    }

    @Test func writesRequestsCommandsAndParts() {
        var h = ATTHarness()
        let rw = handle(ATTFixture.rw, h)
        #expect(access(&h, .write(rw, [9, 8, 7], offset: 0, withResponse: true), a1) == .success([]))
        #expect(h.events == [.written(h.c1, characteristic: ATTFixture.rw, value: [9, 8, 7])])
        // A part at an offset replaces the value from there on.
        #expect(access(&h, .write(rw, [1, 1], offset: 2, withResponse: true), a1) == .success([]))
        #expect(h.server.database[ATTFixture.rw].valueHandle == rw)
        #expect(access(&h, .read(rw, offset: 0), a1) == .success([9, 8, 1, 1]))
        #expect(access(&h, .write(rw, [0], offset: 5, withResponse: true), a1) == .failure(.invalidOffset))
        #expect(access(&h, .write(rw, [UInt8](repeating: 0, count: 21), offset: 0, withResponse: true), a1) == .failure(.invalidAttributeValueLength))
        // A Write Command needs write-without-response.
        #expect(access(&h, .write(rw, [5], offset: 0, withResponse: false), a1) == .success([]))
        #expect(access(&h, .write(handle(ATTFixture.secure, h), [5], offset: 0, withResponse: false), a1) == .failure(.writeNotPermitted))
        #expect(access(&h, .write(handle(ATTFixture.notifyOnly, h), [5], offset: 0, withResponse: true), a1) == .failure(.writeNotPermitted))
    }

    @Test func deferredReadsAndWritesWaitForTheirAnswer() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        let control = handle(ATTFixture.control, h)
        #expect(access(&h, .read(control, offset: 3), a1) == nil)
        guard case .deferredAccess(let read, h.c1, .read(ATTFixture.control, 3))? = h.events.first else { Issue.record("\(h.events)"); return }
        h.gattAnswers = []
        h.absorb(try h.server.respond(to: read, result: .success([0xAB]), now: .zero))
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].0 == a1 && h.gattAnswers[0].1 == .success([0xAB]))
        #expect(access(&h, .write(control, [1, 2], offset: 4, withResponse: true), a2) == nil)
        guard case .deferredAccess(let write, h.c1, .write(ATTFixture.control, [1, 2], 4))? = h.events.first else { Issue.record("\(h.events)"); return }
        h.gattAnswers = []
        h.absorb(try h.server.respond(to: write, result: .failure(.valueNotAllowed), now: .zero))
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].1 == .failure(.valueNotAllowed))
        // A Write Command is handed out and answered at once.
        #expect(access(&h, .write(control, [3], offset: 0, withResponse: false), a1) == .success([]))
        #expect(h.events == [.writeCommand(h.c1, characteristic: ATTFixture.control, value: [3])])
        // Nobody answers: the stored value is read, and a write is refused.
        h.server.deferredAccessAvailable = false
        #expect(access(&h, .read(control, offset: 0), a1) == .success([0xC0]))
        #expect(access(&h, .write(control, [3], offset: 0, withResponse: true), a1) == .failure(.writeRequestRejected))
    }

    @Test func anUnansweredAccessTimesOutAndAGoneCentralsIsForgotten() throws {
        var h = ATTHarness()
        h.server.deferredAccessAvailable = true
        let control = handle(ATTFixture.control, h)
        #expect(access(&h, .read(control, offset: 0), a1, now: .seconds(1)) == nil)
        guard case .deferredAccess(let read, _, _)? = h.events.first else { Issue.record("\(h.events)"); return }
        #expect(h.server.nextDeadline == .seconds(6))
        h.events = []
        h.gattAnswers = []
        h.absorb(h.server.tick(now: .seconds(6)))
        #expect(h.events == [.requestTimedOut(id: read)])
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].1 == .failure(.unlikelyError))
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: read, result: .success([]), now: .seconds(7)) }
        #expect(h.server.nextDeadline == nil)
        // Waiting when the central goes: forgotten, a late answer refused.
        #expect(access(&h, .read(control, offset: 0), a2) == nil)
        guard case .deferredAccess(let second, _, _)? = h.events.first else { Issue.record("\(h.events)"); return }
        #expect(h.server.isWaiting(second))
        h.gattAnswers = []
        h.absorb(h.server.disconnect(h.c1))
        // Answered, so the back end forgets its call too.
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].0 == a2 && h.gattAnswers[0].1 == .failure(.unlikelyError))
        #expect(!h.server.isWaiting(second))
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: second, result: .success([]), now: .seconds(7)) }
    }

    @Test func aPersistedWriteIsAcknowledgedOnlyAfterItsCommit() throws {
        let db = GATTDatabase(deviceName: "gattd", services: [
            ServiceDefinition(uuid: 0xAAB0, characteristics: [
                CharacteristicDefinition(id: "kept", uuid: 0xAAB1, properties: [.read, .write, .writeWithoutResponse], value: [1], valueSource: .persisted),
            ]),
        ])
        var h = ATTHarness()
        h.server = ATTServer(database: db)
        h.server.connect(h.c1, security: .low)
        let kept = db.characteristics.firstIndex { $0.id == "kept" }.map(CharacteristicIndex.init)!
        let vh = db[kept].valueHandle
        #expect(access(&h, .write(vh, [2, 3], offset: 0, withResponse: true), a1) == nil)
        guard case .deferredAccess(let commit, h.c1, .commit(let values, nil))? = h.events.first else { Issue.record("\(h.events)"); return }
        #expect(values == [PersistedValue(characteristic: kept, value: [2, 3])])
        // Not applied before the commit: a read sees the old value.
        #expect(access(&h, .read(vh, offset: 0), a2) == .success([1]))
        h.events = []
        h.gattAnswers = []
        h.absorb(try h.server.respond(to: commit, result: .success([]), now: .zero))
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].0 == a1 && h.gattAnswers[0].1 == .success([]))
        #expect(h.events == [.written(h.c1, characteristic: kept, value: [2, 3])])
        #expect(access(&h, .read(vh, offset: 0), a2) == .success([2, 3]))
        // A failed commit stores nothing; commits outlive failDeferredAccesses.
        #expect(access(&h, .write(vh, [4], offset: 0, withResponse: true), a1) == nil)
        guard case .deferredAccess(let second, _, _)? = h.events.first else { Issue.record("\(h.events)"); return }
        h.gattAnswers = []
        h.absorb(h.server.failDeferredAccesses(now: .zero))
        #expect(h.gattAnswers.isEmpty)
        h.absorb(try h.server.respond(to: second, result: .failure(.unlikelyError), now: .zero))
        #expect(h.gattAnswers.count == 1 && h.gattAnswers[0].1 == .failure(.unlikelyError))
        #expect(access(&h, .read(vh, offset: 0), a2) == .success([2, 3]))
        // A Write Command is stored at once (best effort, as on the PDU path).
        #expect(access(&h, .write(vh, [5], offset: 0, withResponse: false), a1) == .success([]))
        #expect(h.events == [.written(h.c1, characteristic: kept, value: [5])])
    }

    @Test func updatesReachTheBackEndsSubscribers() {
        var h = ATTHarness()
        let notify = ATTFixture.notify
        var (result, outputs) = h.server.notify(characteristic: notify, value: [1], now: .zero)
        #expect(result == .queued(0))
        h.absorb(outputs)
        #expect(h.gattUpdates.isEmpty)
        h.server.setGATTSubscribers(notify, true)
        (result, outputs) = h.server.notify(characteristic: notify, value: [2], now: .zero)
        #expect(result == .queued(1))
        h.absorb(outputs)
        #expect(h.gattUpdates.count == 1 && h.gattUpdates[0].0 == h.server.database[notify].valueHandle && h.gattUpdates[0].1 == [2])
        // `only` names one central: the back end cannot target it.
        (result, outputs) = h.server.notify(characteristic: notify, value: [3], only: h.c1, now: .zero)
        #expect(result == .queued(0))
        h.server.setGATTSubscribers(notify, false)
        (result, outputs) = h.server.notifyMultiple([(notify, [4])], now: .zero)
        #expect(result == .queued(0))
        h.absorb(outputs)
        #expect(h.gattUpdates.count == 1)
    }
}
