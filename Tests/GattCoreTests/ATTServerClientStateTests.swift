import Testing

@testable import GattCore
import GattTestFixtures

/// Bonded clients' GATT state, change awareness and Robust Caching (Core Spec Vol 3 Part G
/// §2.5.2.1, §3.3.3.3, §7.2), PDU by PDU. Handles: `ATTFixture` (Service Changed value
/// 0x0008 with CCCD 0x0009, Client Supported Features 0x000B, Database Hash 0x000D,
/// `notify` value 0x0012 with CCCD 0x0013, `rw` value 0x0010).
@Suite struct ATTServerClientStateTests {
    static let outOfSync: UInt8 = 0x12

    /// A client with Robust Caching enabled that became change-unaware.
    func unawareRobustClient() -> ATTHarness {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x0B, 0x00, 0x01]) == [0x13])
        h.server.databaseChanged(from: [1, 2, 3], range: HandleRange(start: 0x10, end: 0x2B))
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
        return h
    }

    @Test func changeUnawareClientGetsDatabaseOutOfSyncOnceThenItsNextRequestMakesItAware() {
        var h = unawareRobustClient()
        // Read Request: Database Out Of Sync, handle 0x0000, not performed.
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x01, 0x0A, 0x00, 0x00, Self.outOfSync])
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnawareOutOfSyncSent)
        // The next request is served (one ATT bearer) and the client is change-aware.
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
        #expect(h.server.clientState(for: h.c1)?.serviceChangedOwed == nil)
    }

    @Test func writesAndDiscoveryOfAChangeUnawareClientAreNotPerformed() {
        var h = unawareRobustClient()
        #expect(h.request([0x12, 0x12, 0x00, 0x09]) == [0x01, 0x12, 0x00, 0x00, Self.outOfSync])
        #expect(h.events.isEmpty)
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0x01, 0x02])
        var g = unawareRobustClient()
        #expect(g.request([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]) == [0x01, 0x10, 0x00, 0x00, Self.outOfSync])
    }

    @Test func commandsOfAChangeUnawareClientAreIgnored() {
        var h = unawareRobustClient()
        #expect(h.send([0x52, 0x12, 0x00, 0x07]) == [])
        #expect(h.events.isEmpty)
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0x01, 0x02])
        // A command does not count as the request that ends the state.
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
    }

    @Test func readByTypeOfTheDatabaseHashIsAlwaysServedAndTheNextRequestMakesTheClientAware() {
        var h = unawareRobustClient()
        let hash = h.server.database.databaseHash
        #expect(h.request([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]) == [0x09, 18, 0x0D, 0x00] + hash)
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnawareHashRead)
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
    }

    @Test func exchangeMTUIsServedToAChangeUnawareClient() {
        var h = unawareRobustClient()
        #expect(h.request([0x02, 0x00, 0x01]) == [0x03, 0x05, 0x02])
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
    }

    @Test func withoutRobustCachingAChangeUnawareClientIsServed() {
        var h = ATTHarness()
        h.server.databaseChanged(from: [1], range: .all)
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
    }

    @Test func confirmingServiceChangedMakesTheClientAware() {
        var h = unawareRobustClient()
        h.subscribe(0x09, 0x02)  // refused with 0x12: the client is unaware
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: 2) == 0)
        _ = h.request([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B])
        h.subscribe(0x09, 0x02)
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
        h.server.databaseChanged(from: [1], range: HandleRange(start: 0x10, end: 0x28))
        let r = h.server.indicateServiceChangedOwed(h.c1, now: .zero)
        #expect(r?.result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1D, 0x08, 0x00, 0x10, 0x00, 0x28, 0x00]])
        #expect(h.send([0x1E]) == [])
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
        #expect(h.server.clientState(for: h.c1)?.serviceChangedOwed == nil)
    }

    @Test func clientSupportedFeaturesBitsCannotBeCleared() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x0B, 0x00, 0x01]) == [0x13])
        #expect(h.request([0x12, 0x0B, 0x00, 0x00]) == [0x01, 0x12, 0x0B, 0x00, 0x13])
        // Restoring a bond's features cannot clear them either.
        h.server.restoreClientState(h.c1, GATTClientState(clientFeatures: [0x00], databaseHash: h.server.database.databaseHash))
        #expect(h.server.clientFeatures(for: h.c1) == [0x01])
    }

    @Test func restoredBondedClientIsNotifiedWithoutACCCDWrite() {
        var h = ATTHarness()
        let hash = h.server.database.databaseHash
        h.server.restoreClientState(h.c1, GATTClientState(clientConfigurations: ["id:notify": 1, "id:gone": 1, "id:rw": 1], databaseHash: hash))
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 1)
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.rw) == 0)  // cannot notify
        #expect(h.request([0x0A, 0x15, 0x00]) == [0x0B, 0x01, 0x00])
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
        let r = h.server.notify(characteristic: ATTFixture.notify, value: [7], now: .zero)
        #expect(r.result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00, 0x07]])
        #expect(h.server.clientState(for: h.c1)?.clientConfigurations == ["id:notify": 1])
    }

    @Test func restoredClientOfAnotherDatabaseIsOwedServiceChanged() {
        var h = ATTHarness()
        h.server.restoreClientState(h.c1, GATTClientState(clientConfigurations: ["id:service_changed": 2], databaseHash: [9, 9]))
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
        #expect(h.server.clientState(for: h.c1)?.serviceChangedOwed == .all)
        #expect(h.server.clientState(for: h.c1)?.databaseHash == [9, 9])
        let r = h.server.indicateServiceChangedOwed(h.c1, now: .zero)
        #expect(r?.result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1D, 0x08, 0x00, 0x01, 0x00, 0xFF, 0xFF]])
        #expect(h.send([0x1E]) == [])
        #expect(h.server.clientState(for: h.c1)?.databaseHash == h.server.database.databaseHash)
        #expect(h.server.clientState(for: h.c1)?.serviceChangedOwed == nil)
    }

    @Test func bondedClientsCCCDWriteIsAnsweredOnceCommitted() throws {
        var h = ATTHarness()
        h.server.setBonded(h.c1)
        #expect(h.send([0x12, 0x15, 0x00, 0x01, 0x00]) == [])
        guard case .deferredAccess(let rid, let id, .commit(let values, let state?))? = h.events.first else {
            Issue.record("no commit with client state: \(h.events)")
            return
        }
        #expect(id == h.c1)
        #expect(values == [])
        #expect(state.clientConfigurations == ["id:notify": 1])
        // Not applied before it is committed.
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 0)
        h.absorb(try h.server.respond(to: rid, result: .success([]), now: .zero))
        #expect(h.drain(h.c1) == [[0x13]])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 1)
        // A failure is the ATT error; nothing changes.
        #expect(h.send([0x12, 0x15, 0x00, 0x00, 0x00]) == [])
        guard case .deferredAccess(let rid2, _, .commit)? = h.events.first else {
            Issue.record("no commit: \(h.events)")
            return
        }
        h.absorb(try h.server.respond(to: rid2, result: .failure(.unlikelyError), now: .zero))
        #expect(h.drain(h.c1) == [[0x01, 0x12, 0x15, 0x00, 0x0E]])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 1)
    }

    @Test func unbondedClientsCCCDWriteIsAnsweredAtOnce() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x15, 0x00, 0x01, 0x00]) == [0x13])
        #expect(h.server.isBonded(h.c1) == false)
    }

    @Test func changedRangeCoversTheServicesThatDiffer() {
        let old = ATTFixture.database()
        var services = [ServiceDefinition(id: "a", uuid: 0xAAA0)]
        var db = GATTDatabase(deviceName: "gattd", services: services)
        // Service a shrank and service b disappeared: from a's start to b's old end.
        #expect(GATTDatabase.changedRange(from: old.serviceFingerprints, to: db.serviceFingerprints) == HandleRange(start: 0x10, end: 0x2B))
        #expect(GATTDatabase.changedRange(from: db.serviceFingerprints, to: db.serviceFingerprints) == nil)
        services.append(ServiceDefinition(id: "c", uuid: 0xCCC0))
        let grown = GATTDatabase(deviceName: "other name", services: services)
        #expect(GATTDatabase.changedRange(from: db.serviceFingerprints, to: grown.serviceFingerprints) == HandleRange(start: 0x11, end: 0x11))
        db = grown
        #expect(db.serviceFingerprints.count == 4)
    }

    @Test func pendingServiceChangedAccumulatesInTheState() {
        var s = GATTClientState(databaseHash: [1])
        s.databaseChanged(to: [1], range: HandleRange(start: 5, end: 6))
        #expect(s.serviceChangedOwed == nil)
        s.databaseChanged(to: [2], range: HandleRange(start: 0x22, end: 0x32))
        s.databaseChanged(to: [3], range: HandleRange(start: 0x12, end: 0x1A))
        #expect(s.serviceChangedOwed == HandleRange(start: 0x12, end: 0x32))
    }
}
