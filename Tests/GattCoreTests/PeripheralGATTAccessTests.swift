import GattCore
import GattTestFixtures
import Testing

/// The peripheral core with a back end that runs ATT itself (bluetoothd): GATT-level accesses
/// in, `answerGATT` out, and updates for the subscribers it keeps as `updateGATT`, never PDUs.
@Suite struct PeripheralGATTAccessTests {
    var core = Peripheral(database: ATTFixture.database(), payloads: PeripheralFixture.payloads, maxConnections: 2)
    let a = ConnectionID(7)

    @Test mutating func accessesAreAnsweredAtTheGATTLevel() {
        _ = core.handle(.ready(address: PeripheralFixture.address, description: "bluez"), now: .zero)
        _ = core.handle(.connected(a, PeripheralFixture.centralA), now: .zero)
        let rw = core.database[ATTFixture.rw].valueHandle
        #expect(core.handle(.gattAccess(a, GATTAccessID(1), .read(rw, offset: 1)), now: .zero) == [.answerGATT(GATTAccessID(1), .success([0x02]))])
        let out = core.handle(.gattAccess(a, GATTAccessID(2), .write(rw, [5], offset: 0, withResponse: true)), now: .zero)
        #expect(out.contains(.answerGATT(GATTAccessID(2), .success([]))))
        #expect(out.contains(.event(.att(.written(a, characteristic: ATTFixture.rw, value: [5]), central: PeripheralFixture.centralA.address))))
        #expect(!out.contains { if case .send = $0 { true } else { false } })
        // A central the core does not know is answered, not served.
        #expect(core.handle(.gattAccess(ConnectionID(99), GATTAccessID(3), .read(rw, offset: 0)), now: .zero)
            == [.answerGATT(GATTAccessID(3), .failure(.unlikelyError))])
    }

    @Test mutating func updatesGoToTheBackEndsSubscribers() {
        _ = core.handle(.ready(address: PeripheralFixture.address, description: "bluez"), now: .zero)
        let level = core.database[ATTFixture.notify].valueHandle
        #expect(core.handle(.gattSubscribers(level, true), now: .zero).isEmpty)
        var (result, out) = core.notify(characteristic: ATTFixture.notify, value: [9], now: .zero)
        #expect(result == .queued(1))
        #expect(out == [.updateGATT(level, [9])])
        _ = core.handle(.gattSubscribers(level, false), now: .zero)
        (result, out) = core.notify(characteristic: ATTFixture.notify, value: [10], now: .zero)
        #expect(result == .queued(0) && out.isEmpty)
        // A handle that is no characteristic value changes nothing.
        #expect(core.handle(.gattSubscribers(AttributeHandle(0x0001), true), now: .zero).isEmpty)
    }

    @Test mutating func aConfirmationIsTheCentralsEvent() {
        _ = core.handle(.ready(address: PeripheralFixture.address, description: "bluez"), now: .zero)
        _ = core.handle(.connected(a, PeripheralFixture.centralA), now: .zero)
        let level = core.database[ATTFixture.notify].valueHandle
        #expect(core.handle(.gattConfirmed(a, level), now: .zero)
            == [.event(.att(.indicationConfirmed(a, characteristic: ATTFixture.notify), central: PeripheralFixture.centralA.address))])
        // Of a central that left, or of no characteristic value: nothing.
        #expect(core.handle(.gattConfirmed(ConnectionID(99), level), now: .zero).isEmpty)
        #expect(core.handle(.gattConfirmed(a, AttributeHandle(0x0001)), now: .zero).isEmpty)
    }
}
