import Testing

@testable import GattCore
import GattTestFixtures

/// Runtime services (add_service / remove_service): handles of existing attributes never
/// move; new services go after the last handle; a removed one leaves a gap (not reused);
/// the ATT server serves a table with gaps; Service Changed covers exactly the change.
@Suite struct ServiceLayoutTests {
    static func service(_ id: String, _ uuid: UInt16, notify: Bool = false) -> ServiceDefinition {
        ServiceDefinition(id: id, uuid: BluetoothUUID(uuid16: uuid), characteristics: [
            CharacteristicDefinition(id: id + "_c", uuid: BluetoothUUID(uuid16: uuid + 1), properties: notify ? [.read, .notify] : [.read], value: [UInt8(uuid & 0xFF)])
        ])
    }

    @Test func addedServicesGoAfterTheLastHandleAndRemovedOnesLeaveAGap() throws {
        var layout = ServiceLayout(config: [Self.service("a", 0xA000), Self.service("b", 0xB000, notify: true)])
        var db = layout.database(deviceName: "d", appearance: 0)
        // a: 0x0010-0x0012, b: 0x0013-0x0016 (with a CCCD).
        #expect(db.services.map(\.handle.rawValue) == [0x01, 0x06, 0x10, 0x13])
        let before = db
        try layout.add(Self.service("c", 0xC000), after: db)
        db = layout.database(deviceName: "d", appearance: 0)
        #expect(db.services.map(\.handle.rawValue) == [0x01, 0x06, 0x10, 0x13, 0x17])
        #expect(GATTDatabase.changedRange(from: before.serviceFingerprints, to: db.serviceFingerprints) == HandleRange(start: 0x17, end: 0x19))
        // Remove b: a and c keep their handles; 0x0013-0x0016 is a gap.
        let withB = db
        try layout.remove(id: "b", current: db)
        db = layout.database(deviceName: "d", appearance: 0)
        #expect(db.services.map(\.handle.rawValue) == [0x01, 0x06, 0x10, 0x17])
        #expect(db.attribute(at: AttributeHandle(0x14)) == nil)
        #expect(db.value(ofCharacteristic: db.characteristicIndex(named: "c_c")!) == [0x00])
        #expect(GATTDatabase.changedRange(from: withB.serviceFingerprints, to: db.serviceFingerprints) == HandleRange(start: 0x13, end: 0x16))
        // The gap is not reused: the next service goes after c.
        try layout.add(Self.service("d", 0xD000), after: db)
        db = layout.database(deviceName: "d", appearance: 0)
        #expect(db.services.last?.handle.rawValue == 0x1A)
        #expect(layout.fromConfig == [true, false, false])
        #expect(throws: ServiceLayout.Refusal.unknownService("b")) { try layout.remove(id: "b", current: db) }
    }

    @Test func theServerServesATableWithAGap() throws {
        var layout = ServiceLayout(config: [Self.service("a", 0xA000), Self.service("b", 0xB000), Self.service("c", 0xC000)])
        try layout.remove(id: "b", current: layout.database(deviceName: "d", appearance: 0))
        var h = ATTHarness()
        h.server = ATTServer(database: layout.database(deviceName: "d", appearance: 0))
        h.server.connect(h.c1, security: .low)
        // Primary services: a at 0x000E-0x0010, c at 0x0014-0x0016 (b's 0x0011-0x0013 is a gap).
        #expect(h.request([0x10, 0x10, 0x00, 0xFF, 0xFF, 0x00, 0x28]) == [0x11, 0x06, 0x10, 0x00, 0x12, 0x00, 0x00, 0xA0, 0x16, 0x00, 0x18, 0x00, 0x00, 0xC0])
        #expect(h.request([0x0A, 0x14, 0x00]) == [0x01, 0x0A, 0x14, 0x00, 0x01])  // Invalid Handle in the gap
        #expect(h.request([0x04, 0x13, 0x00, 0x15, 0x00]) == [0x01, 0x04, 0x13, 0x00, 0x0A])  // nothing there
        #expect(h.request([0x0A, 0x18, 0x00]) == [0x0B, 0x00])
        #expect(h.request([0x04, 0x12, 0x00, 0x16, 0x00]) == [0x05, 0x01, 0x12, 0x00, 0x01, 0xA0, 0x16, 0x00, 0x00, 0x28])
    }

    @Test func aServiceThatIsIncludedCannotBeRemovedAndTheHandleSpaceIsBounded() throws {
        var a = Self.service("a", 0xA000)
        a.includes = [1]
        var layout = ServiceLayout(config: [a, Self.service("b", 0xB000)])
        let db = layout.database(deviceName: "d", appearance: 0)
        #expect(throws: ServiceLayout.Refusal.included(by: "a")) { try layout.remove(id: "b", current: db) }
        let many = ServiceDefinition(id: "big", uuid: 0xF000, characteristics: (0..<30_000).map { _ in
            CharacteristicDefinition(uuid: 0xF001, properties: [.read]) })
        try layout.add(many, after: db)
        let full = layout.database(deviceName: "d", appearance: 0)
        #expect(throws: ServiceLayout.Refusal.self) { try layout.add(many, after: full) }
    }

    @Test func aRuntimeServiceIsCheckedLikeAConfigOneWithPathsRelativeToTheRequest() throws {
        let db = ATTFixture.database()
        let good = try JSONParser.parse(Array("{\"id\":\"new\",\"uuid\":\"ABC0\",\"characteristics\":[{\"uuid\":\"ABC1\",\"properties\":[\"read\"]}]}".utf8))
        #expect(try RuntimeService.parse(good, in: db).get().uuid == BluetoothUUID(uuid16: 0xABC0))
        let bad = try JSONParser.parse(Array("{\"id\":\"rw\",\"uuid\":\"ABC0\",\"characteristics\":[{\"uuid\":\"xyz\",\"properties\":[\"read\"]}]}".utf8))
        guard case .failure(let errors) = RuntimeService.parse(bad, in: db) else {
            Issue.record("accepted")
            return
        }
        #expect(errors.errors.map(\.path) == ["service.id", "service.characteristics[0].uuid"])
    }
}
