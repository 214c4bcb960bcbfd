import GattCore
import Testing

@Suite("Config reload: ATTServer.replaceDatabase")
struct DatabaseReloadTests {
    private func database(extra: Bool) -> GATTDatabase {
        var chars = [
            CharacteristicDefinition(id: "label", uuid: 0x2B00, properties: [.read, .write], value: Array("default".utf8), maxLength: 20),
            CharacteristicDefinition(id: "hr", uuid: 0x2A37, properties: [.notify], value: [0], maxLength: 4),
        ]
        if extra { chars.insert(CharacteristicDefinition(id: "extra", uuid: 0x2A19, properties: [.read], value: [1], maxLength: 1), at: 0) }
        return GATTDatabase(deviceName: "T", services: [ServiceDefinition(id: "s", uuid: 0x180D, characteristics: chars)])
    }

    @Test func subscriptionsAndValuesFollowTheirCharacteristicAndServiceChangedIsIndicated() throws {
        var server = ATTServer(database: database(extra: false))
        let a = ConnectionID(1), b = ConnectionID(2)
        server.connect(a, security: .low)
        server.connect(b, security: .low)
        let oldHR = try #require(server.database.characteristicIndex(named: "hr"))
        let label = try #require(server.database.characteristicIndex(named: "label"))
        server.setClientConfiguration(for: a, characteristic: oldHR, 0x0001)
        server.setClientConfiguration(for: a, characteristic: CharacteristicIndex(2), 0x0002)  // Service Changed
        let stored = server.setValue(characteristic: label, value: Array("kitchen".utf8))
        #expect(stored)
        let oldHash = server.database.attribute(at: server.database.databaseHashHandle)?.value

        _ = server.replaceDatabase(database(extra: true), now: .zero)

        let db = server.database
        let newHR = try #require(db.characteristicIndex(named: "hr"))
        #expect(newHR.rawValue == oldHR.rawValue + 1)
        #expect(server.clientConfiguration(for: a, characteristic: newHR) == 0x0001)
        #expect(server.clientConfiguration(for: a, characteristic: oldHR) == 0)
        #expect(server.clientConfiguration(for: b, characteristic: newHR) == 0)
        #expect(db.value(ofCharacteristic: try #require(db.characteristicIndex(named: "label"))) == Array("kitchen".utf8))
        #expect(db.value(ofCharacteristic: try #require(db.characteristicIndex(named: "extra"))) == [1])
        #expect(db.attribute(at: db.databaseHashHandle)?.value != oldHash)
        #expect(db.attribute(at: db.databaseHashHandle)?.value == database(extra: true).attribute(at: db.databaseHashHandle)?.value)

        let (result, _) = server.notify(characteristic: CharacteristicIndex(2), value: [0x01, 0x00, 0xFF, 0xFF], now: .zero)
        #expect(result == .queued(1))
        let pdu = server.dequeueOutgoing(for: .fixed(a))?.pdu
        let h = db.serviceChangedHandle.rawValue
        #expect(pdu == [0x1D, UInt8(h & 0xFF), UInt8(h >> 8), 0x01, 0x00, 0xFF, 0xFF])
        let none = server.dequeueOutgoing(for: .fixed(b))
        #expect(none == nil)
    }

    @Test func queuedUpdatesCountsPendingNotifications() throws {
        var server = ATTServer(database: database(extra: false))
        let a = ConnectionID(1)
        server.connect(a, security: .low)
        let hr = try #require(server.database.characteristicIndex(named: "hr"))
        server.setClientConfiguration(for: a, characteristic: hr, 0x0001)
        #expect(server.queuedUpdates(for: a) == 0)
        _ = server.notify(characteristic: hr, value: [1], now: .zero)
        _ = server.notify(characteristic: hr, value: [2], now: .zero)
        #expect(server.queuedUpdates(for: a) == 2)
        #expect(server.queuedUpdates(for: ConnectionID(9)) == nil)
    }
}
