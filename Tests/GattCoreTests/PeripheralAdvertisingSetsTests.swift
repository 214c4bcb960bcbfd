import Testing

@testable import GattCore
import GattTestFixtures

/// The config's `advertising_sets` beside the primary set: one request carries every set to
/// the transport; a connection to one set leaves the others on the air; `max_connections`
/// stops connectable sets only; the `advertise` op and refusals work per set.
@Suite struct PeripheralAdvertisingSetsTests {
    static let primary = PeripheralTests.primary
    static let beacon = set("beacon", type: .nonConnectableUndirected)
    static let second = set("second", type: .connectableUndirected)

    static func set(_ id: String, type: AdvertisingType) -> AdvertisingSet {
        var p = PeripheralTests.payloads
        p.parameters.advertisingType = type
        p.advertisingData = [0x02, 0x01, 0x06, 0x03, 0xFF, 0x34, 0x12]
        return AdvertisingSet(id: id, path: "advertising_sets[0]", payloads: p)
    }

    var core = Peripheral(
        database: ATTFixture.database(), payloads: PeripheralTests.payloads, otherSets: [beacon, second], maxConnections: 1)

    static func requests(_ o: [PeripheralOutput]) -> [[String]] {
        o.compactMap { if case .setAdvertising(let sets) = $0 { sets.map(\.id) } else { nil } }
    }

    @Test mutating func everySetIsAskedForOnceTheControllerIsReady() {
        #expect(core.setAdvertisingWanted(true, set: "beacon").isEmpty, "no controller: nothing to ask")
        let out = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        #expect(Self.requests(out) == [["primary", "beacon", "second"]])
        #expect(core.handle(.advertisingChanged(true, set: "beacon"), now: .zero) == [.event(.advertisingChanged(true, set: "beacon"))])
        #expect(core.isOnAir("beacon") && !core.isOnAir("second"))
        #expect(core.handle(.advertisingChanged(true, set: "beacon"), now: .zero).isEmpty, "reported twice: one event")
    }

    /// max_connections 1: the connection stops the connectable sets; the beacon stays on the air.
    @Test mutating func aConnectionLeavesTheNonConnectableSetOnTheAir() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        for id in ["primary", "beacon", "second"] { _ = core.handle(.advertisingChanged(true, set: id), now: .zero) }
        // The controller ended the set the central connected to (the second set) before reporting
        // the link: with no central counted yet, it is asked for again...
        #expect(Self.requests(core.handle(.advertisingChanged(false, set: "second"), now: .zero)) == [["primary", "beacon", "second"]])
        // ...and the connection (max_connections 1) leaves only the beacon.
        let out = core.handle(.connected(PeripheralTests.a, PeripheralTests.centralA), now: .zero)
        #expect(Self.requests(out) == [["beacon"]])
        #expect(core.advertising == .stopping)
        let gone = core.handle(.disconnected(PeripheralTests.a, reason: .remoteUserTerminatedConnection), now: .zero)
        #expect(Self.requests(gone) == [["primary", "beacon", "second"]])
    }

    /// A set the controller stopped without being asked (a connection to it, below
    /// max_connections) is asked for again.
    @Test mutating func aSetEndedByAConnectionIsAskedForAgain() {
        core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, otherSets: [Self.second], maxConnections: 3)
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true, set: "second"), now: .zero)
        let out = core.handle(.advertisingChanged(false, set: "second"), now: .zero)
        #expect(Self.events(out) == [.advertisingChanged(false, set: "second")])
        #expect(Self.requests(out) == [["primary", "second"]])
    }

    @Test mutating func theAdvertiseOpWorksPerSet() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        #expect(Self.requests(core.setAdvertisingWanted(false, set: "beacon")) == [["primary", "second"]])
        #expect(Self.requests(core.setAdvertisingWanted(false)) == [["second"]])
        #expect(core.setAdvertisingWanted(false, set: "beacon").isEmpty)
        #expect(Self.requests(core.setAdvertisingWanted(true, set: "beacon")) == [["beacon", "second"]], "config order")
    }

    /// A refused set is reported and not asked for again until a disconnection.
    @Test mutating func aRefusedSetWaitsForADisconnection() {
        core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, otherSets: [Self.beacon], maxConnections: 3)
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        let out = core.handle(.advertisingRefused(whileConnected: false, reason: "Memory Capacity Exceeded", set: "beacon"), now: .zero)
        #expect(Self.events(out) == [.advertisingRefused(whileConnected: false, reason: "Memory Capacity Exceeded", set: "beacon")])
        #expect(Self.requests(out) == [], "the transport dropped it already: nothing new to ask")
        _ = core.handle(.connected(PeripheralTests.a, PeripheralTests.centralA), now: .zero)
        #expect(Self.requests(core.handle(.disconnected(PeripheralTests.a, reason: .remoteUserTerminatedConnection), now: .zero)) == [["primary", "beacon"]])
    }

    /// Losing the controller turns every set off; a clean stop asks for none.
    @Test mutating func lostAndShutdown() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true, set: "beacon"), now: .zero)
        #expect(!core.isIdle || !core.connections.isEmpty || core.isOnAir("beacon"))
        let lost = core.handle(.lost(reason: "gone"), now: .zero)
        #expect(Self.events(lost).contains(.advertisingChanged(false, set: "beacon")))
        #expect(core.isIdle)
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        #expect(Self.requests(core.shutdown()) == [[]])
    }

    /// The primary set refused with no central connected is asked for again at the next change;
    /// another set refused waits (for a disconnection, a reload, the op or new data).
    @Test mutating func thePrimarySetRefusedIsAskedForAtTheNextChangeAnotherWaits() {
        core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, otherSets: [Self.beacon], maxConnections: 3)
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingRefused(whileConnected: false, reason: "Unknown", set: "primary"), now: .zero)
        _ = core.handle(.advertisingRefused(whileConnected: false, reason: "Unknown", set: "beacon"), now: .zero)
        #expect(core.advertising == .idle)
        // A central connects (a change): the primary set is asked for again, the beacon not.
        #expect(Self.requests(core.handle(.connected(PeripheralTests.a, PeripheralTests.centralA), now: .zero)) == [["primary"]])
        // New data for the beacon: asked for again.
        var beacon = Self.beacon
        beacon.payloads.advertisingData = [0x02, 0x01, 0x06]
        #expect(Self.requests(core.replaceSet(beacon)) == [["primary", "beacon"]])
    }

    /// What the op turned off stays off across reloads, also for a set a reload removed and a
    /// later one brings back; a removed set still on the air is reported off once confirmed.
    @Test mutating func aSetTurnedOffStaysOffAcrossReloads() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true, set: "beacon"), now: .zero)
        _ = core.setAdvertisingWanted(false, set: "second")
        let db = core.database
        let removed = core.reload(database: db, payloads: PeripheralTests.payloads, otherSets: [Self.beacon], maxConnections: 1, now: .zero)
        #expect(Self.requests(removed) == [])
        let dropped = core.reload(database: db, payloads: PeripheralTests.payloads, otherSets: [], maxConnections: 1, now: .zero)
        #expect(Self.requests(dropped) == [["primary"]])
        #expect(!core.isIdle, "the beacon is on the air until the transport says it is off")
        #expect(Self.events(core.handle(.advertisingChanged(false, set: "beacon"), now: .zero)) == [.advertisingChanged(false, set: "beacon")])
        let back = core.reload(database: db, payloads: PeripheralTests.payloads, otherSets: [Self.beacon, Self.second], maxConnections: 1, now: .zero)
        #expect(Self.requests(back) == [["primary", "beacon"]], "\"second\" is still turned off")
    }

    static func events(_ o: [PeripheralOutput]) -> [PeripheralEvent] { PeripheralTests.events(o) }
}
