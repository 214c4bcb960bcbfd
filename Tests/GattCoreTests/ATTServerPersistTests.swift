import Testing

@testable import GattCore

/// Writes of `"persist": true` values: answered only once the caller made them durable.
@Suite struct ATTServerPersistTests {
    /// Handles: service 0x000E; p1 value 0x0010, p2 value 0x0012 (ext 0x0013), plain value 0x0015.
    static func database() -> GATTDatabase {
        GATTDatabase(deviceName: "gattd", services: [
            ServiceDefinition(id: "s", uuid: 0xAAA0, characteristics: [
                CharacteristicDefinition(id: "p1", uuid: 0xAAA1, properties: [.read, .write, .writeWithoutResponse], value: [0x01], maxLength: 8, persist: true),
                CharacteristicDefinition(id: "p2", uuid: 0xAAA2, properties: [.read, .write, .reliableWrite], value: [0x02], maxLength: 8, persist: true),
                CharacteristicDefinition(id: "plain", uuid: 0xAAA3, properties: [.read, .write, .reliableWrite], value: [0x03], maxLength: 8),
            ])
        ])
    }

    static let p1 = 5, p2 = 6, plain = 7
    static let p1Handle: UInt8 = 0x10, p2Handle: UInt8 = 0x12, plainHandle: UInt8 = 0x15

    private func harness(persistWrites: Bool = true) -> ATTHarness {
        var c = ATTServerConfiguration()
        c.persistWrites = persistWrites
        var h = ATTHarness(configuration: c)
        h.server = ATTServer(database: Self.database(), configuration: c)
        h.server.connect(h.c1, security: .low)
        return h
    }

    @Test func layout() {
        let db = Self.database()
        #expect(db.characteristics[Self.p1].valueHandle == AttributeHandle(UInt16(Self.p1Handle)))
        #expect(db.characteristics[Self.p2].valueHandle == AttributeHandle(UInt16(Self.p2Handle)))
        #expect(db.characteristics[Self.plain].valueHandle == AttributeHandle(UInt16(Self.plainHandle)))
    }

    @Test func writeResponseWaitsForDurabilityAndLaterPDUsWaitInOrder() throws {
        var h = harness()
        #expect(h.send([0x12, Self.p1Handle, 0x00, 0xAA]) == [])
        let rid = PendingRequestID(1)
        #expect(h.events == [.persistRequest(id: rid, h.c1, values: [PersistedWrite(characteristic: Self.p1, value: [0xAA])])])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x01])
        // A read sent meanwhile is held: it must see the new value, after the Write Response.
        #expect(h.send([0x0A, Self.p1Handle, 0x00]) == [])
        h.events = []
        h.absorb(try h.server.respond(to: rid, result: .success([]), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x13], [0x0B, 0xAA]])
        #expect(h.events == [.written(h.c1, characteristic: Self.p1, value: [0xAA])])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0xAA])
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: rid, result: .success([]), now: .seconds(1)) }
    }

    @Test func aFailedPersistIsAnsweredWithTheErrorAndChangesNothing() throws {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        _ = h.send([0x0A, Self.p1Handle, 0x00])
        h.events = []
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .failure(.unlikelyError), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x01, 0x12, Self.p1Handle, 0x00, 0x0E], [0x0B, 0x01]])
        #expect(h.events == [])
        #expect(h.server.database.value(ofCharacteristic: Self.p1) == [0x01])
    }

    @Test func invalidWritesAreAnsweredAtOnceWithoutAPersistRequest() {
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

    @Test func withoutPersistWritesTheResponseIsImmediate() {
        var h = harness(persistWrites: false)
        #expect(h.request([0x12, Self.p1Handle, 0x00, 0xAA]) == [0x13])
        #expect(h.events == [.written(h.c1, characteristic: Self.p1, value: [0xAA])])
    }

    @Test func writesOfOtherValuesAreNotHeld() {
        var h = harness()
        #expect(h.request([0x12, Self.plainHandle, 0x00, 0x33]) == [0x13])
        #expect(h.events == [.written(h.c1, characteristic: Self.plain, value: [0x33])])
    }

    @Test func executeWriteCommitsAllValuesAtOnceOnlyWhenDurable() throws {
        for success in [true, false] {
            var h = harness()
            #expect(h.request([0x16, Self.p2Handle, 0x00, 0x00, 0x00, 0xB1, 0xB2]) == [0x17, Self.p2Handle, 0x00, 0x00, 0x00, 0xB1, 0xB2])
            #expect(h.request([0x16, Self.plainHandle, 0x00, 0x00, 0x00, 0xC1]) == [0x17, Self.plainHandle, 0x00, 0x00, 0x00, 0xC1])
            #expect(h.send([0x18, 0x01]) == [])
            #expect(h.events == [.persistRequest(id: PendingRequestID(1), h.c1, values: [PersistedWrite(characteristic: Self.p2, value: [0xB1, 0xB2])])])
            #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0x03])
            h.events = []
            h.absorb(try h.server.respond(to: PendingRequestID(1), result: success ? .success([]) : .failure(.unlikelyError), now: .zero))
            if success {
                #expect(h.drain(h.c1) == [[0x19]])
                #expect(h.events == [
                    .written(h.c1, characteristic: Self.p2, value: [0xB1, 0xB2]), .written(h.c1, characteristic: Self.plain, value: [0xC1]),
                ])
                #expect(h.server.database.value(ofCharacteristic: Self.p2) == [0xB1, 0xB2])
                #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0xC1])
            } else {
                #expect(h.drain(h.c1) == [[0x01, 0x18, Self.p2Handle, 0x00, 0x0E]])
                #expect(h.events == [])
                #expect(h.server.database.value(ofCharacteristic: Self.p2) == [0x02])
                #expect(h.server.database.value(ofCharacteristic: Self.plain) == [0x03])
            }
        }
    }

    @Test func theControlClientLeavingDoesNotFailAPersistRequest() throws {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        h.absorb(h.server.failPendingRequests(now: .seconds(1)))
        #expect(h.drain(h.c1) == [])
        h.absorb(try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .seconds(1)))
        #expect(h.drain(h.c1) == [[0x13]])
    }

    @Test func anUnansweredPersistRequestTimesOutWithUnlikelyError() {
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

    @Test func aRequestWhoseCentralLeftIsUnknown() {
        var h = harness()
        _ = h.send([0x12, Self.p1Handle, 0x00, 0xAA])
        _ = h.server.disconnect(h.c1)
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero) }
    }
}
