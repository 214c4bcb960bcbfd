import Testing

@testable import GattCore
import GattTestFixtures

/// Writes acknowledged only after a commit (`DeferredAccess.commit`): `.persisted`
/// values and a bonded client's state (Core Spec Vol 3 Part G §3.3.3.3).
@Suite struct ATTServerCommitTests {
    /// Handles: service 0x0010; p1 value 0x0012 (CCCD 0x0013), p2 value 0x0015 (ext 0x0016),
    /// plain value 0x0018 (ext 0x0019), p3 value 0x001B (ext 0x001C), d value 0x001E (ext 0x001F).
    static func database() -> GATTDatabase { GATTDatabase(deviceName: "gattd", services: [service()]) }

    static func service() -> ServiceDefinition {
            ServiceDefinition(id: "s", uuid: 0xAAA0, characteristics: [
                CharacteristicDefinition(
                    id: "p1", uuid: 0xAAA1, properties: [.read, .write, .writeWithoutResponse, .notify], value: [0x01], maxLength: 8,
                    valueSource: .persisted),
                CharacteristicDefinition(id: "p2", uuid: 0xAAA2, properties: [.read, .write, .reliableWrite], value: [0x02], maxLength: 8, valueSource: .persisted),
                CharacteristicDefinition(id: "plain", uuid: 0xAAA3, properties: [.read, .write, .reliableWrite], value: [0x03], maxLength: 8),
                CharacteristicDefinition(id: "p3", uuid: 0xAAA4, properties: [.read, .write, .reliableWrite], value: [0x04], maxLength: 8, valueSource: .persisted),
                CharacteristicDefinition(id: "d", uuid: 0xAAA5, properties: [.read, .write, .reliableWrite], value: [0x05], maxLength: 8, valueSource: .deferred),
            ])
    }

    static let p1 = CharacteristicIndex(6), p2 = CharacteristicIndex(7), plain = CharacteristicIndex(8), p3 = CharacteristicIndex(9), d = CharacteristicIndex(10)
    static let p1Handle: UInt8 = 0x12, p1CCCD: UInt8 = 0x13, p2Handle: UInt8 = 0x15, plainHandle: UInt8 = 0x18
    static let p3Handle: UInt8 = 0x1B, dHandle: UInt8 = 0x1E

    /// A harness over `database()`; reads and writes of `.deferred` values are not handed out
    /// unless `deferredAccess` (commits are, regardless).
    private func harness(deferredAccess: Bool = false) -> ATTHarness {
        var h = ATTHarness()
        h.server = ATTServer(database: Self.database())
        h.server.connect(h.c1, security: .low)
        h.server.deferredAccessAvailable = deferredAccess
        return h
    }

    private func commit(_ values: [(CharacteristicIndex, [UInt8])], clientState: GATTClientState? = nil) -> DeferredAccess {
        .commit(values: values.map { PersistedValue(characteristic: $0.0, value: $0.1) }, clientState: clientState)
    }

    @Test func layout() {
        let db = Self.database()
        #expect(db[Self.p1].valueHandle == AttributeHandle(UInt16(Self.p1Handle)))
        #expect(db[Self.p1].cccdHandle == AttributeHandle(UInt16(Self.p1CCCD)))
        #expect(db[Self.p2].valueHandle == AttributeHandle(UInt16(Self.p2Handle)))
        #expect(db[Self.plain].valueHandle == AttributeHandle(UInt16(Self.plainHandle)))
        #expect(db[Self.p3].valueHandle == AttributeHandle(UInt16(Self.p3Handle)))
        #expect(db[Self.d].valueHandle == AttributeHandle(UInt16(Self.dHandle)))
    }

    @Test func writeResponseWaitsForTheCommitAndLaterPDUsWaitInOrder() throws {
        var h = harness()
        #expect(h.send([0x12, Self.p1Handle, 0x00, 0xAA]) == [])
        let rid = PendingRequestID(1)
        #expect(h.events == [.deferredAccess(id: rid, h.c1, commit([(Self.p1, [0xAA])]))])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x01])
        // A read and a Write Command sent meanwhile are held: the read must see the new
        // value after the Write Response, the command's value comes last.
        #expect(h.send([0x0A, Self.p1Handle, 0x00]) == [])
        #expect(h.send([0x52, Self.p1Handle, 0x00, 0x77]) == [])
        #expect(h.events == [])
        h.absorb(try h.server.respond(to: rid, result: .success([]), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x13], [0x0B, 0xAA]])
        #expect(h.events == [.written(h.c1, characteristic: Self.p1, value: [0xAA]), .written(h.c1, characteristic: Self.p1, value: [0x77])])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x77])
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: rid, result: .success([]), now: .seconds(1)) }
    }

    @Test func aFailedCommitIsAnsweredUnlikelyErrorAndStoresNothing() throws {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        _ = h.send([0x0A, Self.p1Handle, 0x00])
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .failure(.unlikelyError), now: .seconds(1)))
        // The Error Response names the Write Request and the handle; the held read follows.
        #expect(h.drain(h.c1) == [[0x01, 0x12, Self.p1Handle, 0x00, 0x0E], [0x0B, 0x01]])
        #expect(h.events == [])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x01])
    }

    @Test func invalidWritesAreAnsweredAtOnceWithoutACommit() {
        var h = harness()
        #expect(h.request([0x12, Self.p1Handle, 0x00] + [UInt8](repeating: 7, count: 9)) == [0x01, 0x12, Self.p1Handle, 0x00, 0x0D])
        #expect(h.events == [])
    }

    @Test func writeCommandsAreStoredAtOnce() {
        var h = harness()
        #expect(h.send([0x52, Self.p1Handle, 0x00, 0x77]) == [])
        #expect(h.events == [.written(h.c1, characteristic: Self.p1, value: [0x77])])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x77])
    }

    @Test func writesOfStoredValuesAreNotHeld() {
        var h = harness()
        #expect(h.request([0x12, Self.plainHandle, 0x00, 0x33]) == [0x13])
        #expect(h.events == [.written(h.c1, characteristic: Self.plain, value: [0x33])])
    }

    @Test func executeWriteIsOneCommitOfEveryValueAnsweredOnce() throws {
        for success in [true, false] {
            var h = harness()
            #expect(h.request([0x16, Self.p2Handle, 0x00, 0x00, 0x00, 0xB1, 0xB2]) == [0x17, Self.p2Handle, 0x00, 0x00, 0x00, 0xB1, 0xB2])
            #expect(h.request([0x16, Self.plainHandle, 0x00, 0x00, 0x00, 0xC1]) == [0x17, Self.plainHandle, 0x00, 0x00, 0x00, 0xC1])
            #expect(h.request([0x16, Self.p3Handle, 0x00, 0x00, 0x00, 0xD1]) == [0x17, Self.p3Handle, 0x00, 0x00, 0x00, 0xD1])
            #expect(h.send([0x18, 0x01]) == [])
            // One commit, one id, with both `.persisted` values (not the stored one).
            #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, commit([(Self.p2, [0xB1, 0xB2]), (Self.p3, [0xD1])]))])
            #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0x03])
            h.events = []
            h.absorb(try h.server.respond(to: PendingRequestID(1), result: success ? .success([]) : .failure(.unlikelyError), now: .zero))
            if success {
                #expect(h.drain(h.c1) == [[0x19]])
                #expect(h.events == [
                    .written(h.c1, characteristic: Self.p2, value: [0xB1, 0xB2]), .written(h.c1, characteristic: Self.plain, value: [0xC1]),
                    .written(h.c1, characteristic: Self.p3, value: [0xD1]),
                ])
                #expect(h.server.database.value(ofCharacteristic: Self.p2) == [0xB1, 0xB2])
                #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0xC1])
                #expect(h.server.database.value(ofCharacteristic: Self.p3) == [0xD1])
            } else {
                #expect(h.drain(h.c1) == [[0x01, 0x18, Self.p2Handle, 0x00, 0x0E]])
                #expect(h.events == [])
                #expect(h.server.database.value(ofCharacteristic: Self.p2) == [0x02])
                #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0x03])
                #expect(h.server.database.value(ofCharacteristic: Self.p3) == [0x04])
            }
            #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero) }
        }
    }

    @Test func executeWriteWithADeferredValueCommitsAfterTheDeferredWrite() throws {
        var h = harness(deferredAccess: true)
        _ = h.send([0x16, Self.dHandle, 0x00, 0x00, 0x00, 0xE1])
        _ = h.send([0x16, Self.p2Handle, 0x00, 0x00, 0x00, 0xB1])
        #expect(h.send([0x18, 0x01]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, .write(characteristic: Self.d, value: [0xE1], offset: 0))])
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero))
        // Still no Execute Write Response: the `.persisted` value is committed first.
        #expect(h.drain(h.c1) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(2), h.c1, commit([(Self.p2, [0xB1])]))])
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(2), result: .success([]), now: .zero))
        #expect(h.drain(h.c1) == [[0x19]])
        #expect(h.events == [.written(h.c1, characteristic: Self.p2, value: [0xB1])])
    }

    @Test func aBondedClientsWritesCommitItsStateAndItsValuesSeparately() throws {
        var h = harness()
        h.server.setBonded(h.c1)
        // A CCCD write: a commit of the client state after it, no values.
        #expect(h.send([0x12, Self.p1CCCD, 0x00, 0x01, 0x00]) == [])
        let state = try #require(h.server.clientState(for: h.c1))
        var after = state
        after.clientConfigurations = ["id:p1": 1]
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, commit([], clientState: after))])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: Self.p1) == 0)
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero))
        #expect(h.drain(h.c1) == [[0x13]])
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: Self.p1, notify: true, indicate: false)])
        // A value write of the bonded client leaves its state alone: values only.
        #expect(h.send([0x12, Self.p1Handle, 0x00, 0xAB]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(2), h.c1, commit([(Self.p1, [0xAB])]))])
    }

    @Test func aFailedClientStateCommitChangesNoSubscription() throws {
        var h = harness()
        h.server.setBonded(h.c1)
        _ = h.send([0x12, Self.p1CCCD, 0x00, 0x01, 0x00])
        _ = h.send([0x0A, Self.p1CCCD, 0x00])
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .failure(.unlikelyError), now: .zero))
        #expect(h.drain(h.c1) == [[0x01, 0x12, Self.p1CCCD, 0x00, 0x0E], [0x0B, 0x00, 0x00]])
        #expect(h.events == [])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: Self.p1) == 0)
    }

    @Test func losingTheAnswererOfReadsAndWritesDoesNotFailACommit() throws {
        var h = harness(deferredAccess: true)
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        h.server.deferredAccessAvailable = false
        h.absorb(h.server.failDeferredAccesses(now: .seconds(1)))
        #expect(h.drain(h.c1) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, commit([(Self.p1, [0xAA])]))])
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x13]])
    }

    @Test func anUnansweredCommitTimesOutWithUnlikelyError() {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        #expect(h.server.nextDeadline == .seconds(30))
        h.absorb(h.server.tick(now: .seconds(29)))
        #expect(h.drain(h.c1) == [])
        h.events = []
        h.absorb(h.server.tick(now: .seconds(30)))
        #expect(h.drain(h.c1) == [[0x01, 0x12, Self.p1Handle, 0x00, 0x0E]])
        #expect(h.events == [.requestTimedOut(id: PendingRequestID(1))])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x01])
    }

    @Test func aCommitWhoseCentralLeftIsUnknown() {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        _ = h.server.disconnect(h.c1)
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero) }
    }

    /// A reload while a commit waits (a config with a service before ours: every handle moves):
    /// the commit's write lands on the same characteristic at its new handle, not on whatever
    /// now sits at the old one.
    @Test func aCommitWaitingThroughAReloadLandsOnTheSameCharacteristic() throws {
        var h = harness()
        #expect(h.send([0x12, Self.p1Handle, 0x00, 0xAA]) == [])
        let rid = PendingRequestID(1)
        let before = ServiceDefinition(uuid: 0xBBB0, characteristics: [
            CharacteristicDefinition(uuid: 0xBBB1, properties: [.read, .write], value: [0xEE], maxLength: 8),
            CharacteristicDefinition(uuid: 0xBBB2, properties: [.read, .write], value: [0xEF], maxLength: 8),
        ])
        let moved = GATTDatabase(deviceName: "gattd", services: [before, Self.service()])
        let newP1 = try #require(moved.characteristicIndex(id: "p1"))
        #expect(moved[newP1].valueHandle != AttributeHandle(UInt16(Self.p1Handle)))
        let atOldHandle = try #require(moved.attribute(at: AttributeHandle(UInt16(Self.p1Handle))))
        h.absorb(h.server.replaceDatabase(moved, now: .seconds(1)))
        h.absorb(try h.server.respond(to: rid, result: .success([]), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x13]])
        #expect(h.server.database.value(ofCharacteristic: newP1) == [0xAA])
        #expect(h.server.database.attribute(at: AttributeHandle(UInt16(Self.p1Handle)))?.value == atOldHandle.value, "the old handle's attribute is untouched")
    }
}
