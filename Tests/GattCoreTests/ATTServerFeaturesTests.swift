import Testing
@testable import GattCore
import GattTestFixtures

/// Server Supported Features (Vol 3 Part G §7.4) and Client Supported Features bits 1 and 2
/// (§7.2), PDU by PDU against `ATTFixture` (Server Supported Features at 0x000F).
@Suite struct ATTServerFeaturesTests {
    @Test func serverSupportedFeaturesIsAlwaysInTheGATTServiceAfterTheDatabaseHash() {
        var h = ATTHarness()
        // Read By Type «Characteristic» from the Database Hash's declaration: it, then 0x2B3A.
        #expect(h.request([0x08, 0x0C, 0x00, 0x0F, 0x00, 0x03, 0x28]) == [
            0x09, 0x07,
            0x0C, 0x00, 0x02, 0x0D, 0x00, 0x2A, 0x2B,
            0x0E, 0x00, 0x02, 0x0F, 0x00, 0x3A, 0x2B,
        ])
        // EATT off: bit 0 clear.
        #expect(h.request([0x0A, 0x0F, 0x00]) == [0x0B, 0x00])
        // Read-only.
        #expect(h.request([0x12, 0x0F, 0x00, 0x01]) == [0x01, 0x12, 0x0F, 0x00, 0x03])
    }

    @Test func theEATTBitFollowsTheSwitchAndNeitherHandlesNorTheHashMove() {
        var db = ATTFixture.database()
        let hash = db.databaseHash
        db.setEnhancedATTSupported(true)
        #expect(db.enhancedATTSupported && db.databaseHash == hash)
        var h = ATTHarness()
        h.server = ATTServer(database: db)
        h.server.connect(h.c1, security: .low)
        #expect(h.request([0x0A, 0x0F, 0x00]) == [0x0B, 0x01])
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])  // the first user value stays at 0x0012
        db.setEnhancedATTSupported(false)
        #expect(!db.enhancedATTSupported && db.value(ofCharacteristic: GATTDatabase.BuiltIn.serverSupportedFeatures.index) == [0x00])
    }

    @Test func thePeripheralSetsTheBitAndKeepsItAcrossAReloadThatChangesTheDatabase() {
        var core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, maxConnections: 1)
        #expect(!core.enhancedATT)
        core.setEnhancedATT(true)
        #expect(core.database.value(ofCharacteristic: GATTDatabase.BuiltIn.serverSupportedFeatures.index) == [0x01])
        let other = GATTDatabase(deviceName: "x", services: [ServiceDefinition(uuid: 0xBBB0)])
        _ = core.reload(database: other, payloads: PeripheralTests.payloads, maxConnections: 1, now: .zero)
        #expect(core.enhancedATT)
        core.setEnhancedATT(false)
        #expect(core.database.value(ofCharacteristic: GATTDatabase.BuiltIn.serverSupportedFeatures.index) == [0x00])
    }

    @Test func clientSupportedFeaturesKeepsBitsZeroToTwoAndIgnoresTheRest() {
        var h = ATTHarness()
        // Robust Caching + EATT + Multiple Handle Value Notifications + reserved bits 3 and 7.
        #expect(h.request([0x12, 0x0B, 0x00, 0x8F]) == [0x13])
        #expect(h.events == [.clientFeaturesChanged(h.c1, features: [0x07])])
        #expect(h.request([0x0A, 0x0B, 0x00]) == [0x0B, 0x07])
        // Only reserved bits: nothing changes, no event.
        #expect(h.request([0x12, 0x0B, 0x00, 0xFF]) == [0x13])
        #expect(h.events == [])
    }

    @Test func clearingTheEATTOrMultipleNotificationsBitIsValueNotAllowed() {
        var h = ATTHarness()
        #expect(h.request([0x12, 0x0B, 0x00, 0x06]) == [0x13])
        #expect(h.request([0x12, 0x0B, 0x00, 0x04]) == [0x01, 0x12, 0x0B, 0x00, 0x13])  // clears bit 1
        #expect(h.request([0x12, 0x0B, 0x00, 0x02]) == [0x01, 0x12, 0x0B, 0x00, 0x13])  // clears bit 2
        #expect(h.request([0x12, 0x0B, 0x00, 0x07]) == [0x13])
        #expect(h.request([0x0A, 0x0B, 0x00]) == [0x0B, 0x07])
    }

    @Test func restoredClientFeaturesAreMaskedToo() {
        var h = ATTHarness()
        h.server.restoreClientState(h.c1, GATTClientState(clientFeatures: [0xFE], databaseHash: h.server.database.databaseHash))
        #expect(h.server.clientFeatures(for: h.c1) == [0x06])
    }

    // MARK: Multiple Handle Value Notification (Vol 3 Part F §3.4.7.4)

    /// Notifications on for `notify` (0x0014) and `control` (0x001F).
    static func subscribed(features: UInt8) -> ATTHarness {
        var h = ATTHarness()
        h.subscribe(0x15, 0x01)
        h.subscribe(0x20, 0x01)
        if features != 0 { _ = h.request([0x12, 0x0B, 0x00, features]) }
        return h
    }

    @Test func severalValuesGoInOneMultipleHandleValueNotificationWhenTheClientSetBit2() {
        var h = Self.subscribed(features: 0x04)
        let r = h.server.notifyMultiple([(ATTFixture.notify, [0xAA, 0xBB]), (ATTFixture.control, [0xCC])], now: .zero)
        #expect(r.result == .queued(1))
        // Handle Length Value tuples: 0x0014, 2, AA BB; 0x001F, 1, CC.
        #expect(h.drain(h.c1) == [[0x23, 0x14, 0x00, 0x02, 0x00, 0xAA, 0xBB, 0x1F, 0x00, 0x01, 0x00, 0xCC]])
    }

    @Test func withoutBit2EachValueIsItsOwnNotification() {
        var h = Self.subscribed(features: 0x01)
        let r = h.server.notifyMultiple([(ATTFixture.notify, [0xAA, 0xBB]), (ATTFixture.control, [0xCC])], now: .zero)
        #expect(r.result == .queued(1))  // one client reached
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00, 0xAA, 0xBB], [0x1B, 0x1F, 0x00, 0xCC]])
    }

    @Test func oneValueIsAHandleValueNotificationEvenWithBit2() {
        var h = Self.subscribed(features: 0x04)
        _ = h.server.notifyMultiple([(ATTFixture.notify, [0xAA])], now: .zero)
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00, 0xAA]])
    }

    @Test func valuesThatDoNotFitTheMTUWholeGoAsSeparateNotifications() {
        var h = Self.subscribed(features: 0x04)
        // ATT_MTU 23: 1 + (4 + 10) + (4 + 5) = 24 octets do not fit; each alone is truncated to 20.
        let a = [UInt8](repeating: 0xA1, count: 10), b = [UInt8](repeating: 0xB2, count: 5)
        #expect(h.server.notifyMultiple([(ATTFixture.notify, a), (ATTFixture.control, b)], now: .zero).result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00] + a, [0x1B, 0x1F, 0x00] + b])
        // 1 + (4 + 10) + (4 + 4) = 23: fits exactly.
        _ = h.server.notifyMultiple([(ATTFixture.notify, a), (ATTFixture.control, Array(b.prefix(4)))], now: .zero)
        #expect(h.drain(h.c1) == [[0x23, 0x14, 0x00, 0x0A, 0x00] + a + [0x1F, 0x00, 0x04, 0x00] + Array(b.prefix(4))])
    }

    @Test func indicationsAreAlwaysOnePerValue() {
        var h = ATTHarness()
        h.subscribe(0x15, 0x02)  // notify: indications
        h.subscribe(0x20, 0x01)  // control: notifications
        _ = h.request([0x12, 0x0B, 0x00, 0x04])
        #expect(h.server.notifyMultiple([(ATTFixture.notify, [1]), (ATTFixture.control, [2])], now: .zero).result == .queued(1))
        #expect(h.drain(h.c1) == [[0x1B, 0x1F, 0x00, 0x02], [0x1D, 0x14, 0x00, 0x01]])
    }
}
