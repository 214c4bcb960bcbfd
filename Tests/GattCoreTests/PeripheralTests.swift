import Testing
@testable import GattCore
import GattTestFixtures

/// The peripheral core driven by a scripted transport: the scenarios every transport shares
/// (connect, subscribe, notify with backpressure, disconnect, reload, stop), PDU by PDU.
@Suite struct PeripheralTests {
    static let payloads = AdvertisingPayloads(
        advertisingData: [0x02, 0x01, 0x06], scanResponseData: [],
        parameters: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected),
        isBeaconOnly: false)
    static let primary = AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: payloads)
    static let address = BluetoothAddress("C0:FF:EE:00:00:01")!
    static let centralA = TransportPeer(address: BluetoothAddress("11:22:33:44:55:66")!, addressType: .random, handle: 0x40)
    static let centralB = TransportPeer(address: BluetoothAddress("11:22:33:44:55:77")!, addressType: .public, handle: 0x41)
    static let a = ConnectionID(0x40), b = ConnectionID(0x41)
    /// Write Request to the `notify` characteristic's CCCD: notifications on.
    static let subscribe: [UInt8] = [0x12, 0x15, 0x00, 0x01, 0x00]

    var core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, maxConnections: 2)

    static func sends(_ o: [PeripheralOutput]) -> [(BearerID, [UInt8])] {
        o.compactMap { if case .send(let id, let pdu) = $0 { (id, pdu) } else { nil } }
    }
    static func events(_ o: [PeripheralOutput]) -> [PeripheralEvent] {
        o.compactMap { if case .event(let e) = $0 { e } else { nil } }
    }

    /// Ready, advertising, central A connected and subscribed, its transport idle.
    mutating func connected() {
        _ = core.handle(.ready(address: Self.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true), now: .zero)
        _ = core.handle(.connected(Self.a, Self.centralA), now: .zero)
        _ = core.handle(.received(.fixed(Self.a), Self.subscribe), now: .zero)
        let out = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        #expect(Self.sends(out).map(\.1) == [[0x13]])  // Write Response
    }

    @Test mutating func readyAsksForAdvertisingWithThePayloads() {
        let out = core.handle(.ready(address: Self.address, description: "test"), now: .zero)
        #expect(out == [.event(.controllerReady(address: Self.address, description: "test")), .setAdvertising([Self.primary])])
        #expect(core.advertising == .starting)
        #expect(core.handle(.advertisingChanged(true), now: .zero) == [.event(.advertisingChanged(true))])
        #expect(core.advertising == .advertising && core.isAdvertising)
    }

    @Test mutating func nothingIsSentBeforeTheTransportHasRoom() {
        connected()
        let out = core.handle(.received(.fixed(Self.a), [0x0A, 0x03, 0x00]), now: .zero)  // Read Request
        #expect(Self.sends(out).isEmpty)
        let sent = Self.sends(core.handle(.readyToSend(.fixed(Self.a)), now: .zero))
        #expect(sent.count == 1 && sent[0].0 == .fixed(Self.a) && sent[0].1.first == 0x0B)
        // One PDU per readyToSend: the next one waits for the next.
        #expect(Self.sends(core.handle(.readyToSend(.fixed(Self.a)), now: .zero)).isEmpty)
    }

    @Test mutating func notifyWithBackpressureAnswersBusyThenReady() {
        connected()
        var results: [NotifyResult] = []
        for i in 0..<40 {
            let (r, out) = core.notify(characteristic: ATTFixture.notify, value: [UInt8(i)], now: .zero)
            results.append(r)
            if i == 0 { #expect(Self.sends(out).isEmpty) }  // no room: the transport did not say so
        }
        #expect(results.prefix(32).allSatisfy { $0 == .queued(1) })
        #expect(results.dropFirst(32).allSatisfy { $0 == .busy })
        var delivered: [[UInt8]] = []
        var sawReady = false
        for _ in 0..<40 {
            let out = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
            delivered += Self.sends(out).map(\.1)
            if Self.events(out).contains(.att(.ready, central: nil)) { sawReady = true }
        }
        #expect(delivered == (0..<32).map { [0x1B, 0x14, 0x00, UInt8($0)] })
        #expect(sawReady)
    }

    @Test mutating func maxConnectionsStopsAdvertisingAndADisconnectionResumesIt() {
        connected()
        _ = core.handle(.advertisingChanged(false), now: .zero)  // the connection ended it
        #expect(core.advertising == .starting)  // one of two connections: advertise again
        _ = core.handle(.advertisingChanged(true), now: .zero)
        let out = core.handle(.connected(Self.b, Self.centralB), now: .zero)
        #expect(out.contains(.setAdvertising([])))
        #expect(core.advertising == .stopping)
        _ = core.handle(.advertisingChanged(false), now: .zero)
        #expect(core.advertising == .idle)
        let after = core.handle(.disconnected(Self.b, reason: .remoteUserTerminatedConnection), now: .zero)
        #expect(after.contains(.setAdvertising([Self.primary])))
        #expect(Self.events(after).contains { if case .disconnected(let c, .remoteUserTerminatedConnection, nil) = $0 { c.id == Self.b } else { false } })
    }

    @Test mutating func aControllerThatRefusesWhileConnectedIsAskedAgainOnlyAfterADisconnection() {
        connected()
        _ = core.handle(.advertisingChanged(false), now: .zero)
        let out = core.handle(.advertisingRefused(whileConnected: true, reason: "Command Disallowed"), now: .zero)
        #expect(core.advertising == .refusedWhileConnected)
        #expect(!out.contains { if case .setAdvertising = $0 { true } else { false } })
        #expect(core.setAdvertisingWanted(true).isEmpty)
        let after = core.handle(.disconnected(Self.a, reason: .remoteUserTerminatedConnection), now: .zero)
        #expect(after.contains(.setAdvertising([Self.primary])))
    }

    @Test mutating func theAdvertiseOpTurnsItOffAndOn() {
        connected()
        _ = core.handle(.advertisingChanged(true), now: .zero)
        #expect(core.setAdvertisingWanted(false) == [.setAdvertising([])])
        #expect(core.setAdvertisingWanted(false).isEmpty)
        #expect(core.setAdvertisingWanted(true) == [.setAdvertising([Self.primary])])
    }

    @Test mutating func insufficientEncryptionAsksForSecurityOnce() {
        connected()
        let secure = ATTFixture.database()[ATTFixture.secure].valueHandle.rawValue
        let read: [UInt8] = [0x0A, UInt8(secure & 0xFF), UInt8(secure >> 8)]
        _ = core.handle(.received(.fixed(Self.a), read), now: .zero)
        let out = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        #expect(Self.sends(out).map(\.1) == [[0x01, 0x0A, read[1], read[2], 0x0F]])
        #expect(out.contains(.requestSecurity(Self.a, .medium, reason: .insufficientEncryption)))
        _ = core.handle(.received(.fixed(Self.a), read), now: .zero)
        #expect(!core.handle(.readyToSend(.fixed(Self.a)), now: .zero).contains(.requestSecurity(Self.a, .medium, reason: .insufficientEncryption)))
        // The central paired: the same read succeeds.
        _ = core.handle(.securityChanged(Self.a, .medium), now: .zero)
        _ = core.handle(.received(.fixed(Self.a), read), now: .zero)
        #expect(Self.sends(core.handle(.readyToSend(.fixed(Self.a)), now: .zero)).map(\.1) == [[0x0B, 0x55]])
    }

    @Test mutating func securityRequestedOnConnectOnlyWhenConfigured() {
        _ = core.handle(.ready(address: Self.address, description: "test"), now: .zero)
        #expect(!core.handle(.connected(Self.a, Self.centralA), now: .zero).contains { if case .requestSecurity = $0 { true } else { false } })
        core.securityOnConnect = .high
        #expect(core.handle(.connected(Self.b, Self.centralB), now: .zero).contains(.requestSecurity(Self.b, .high, reason: .insufficientAuthentication)))
    }

    @Test mutating func pairingEventsPassThroughForKnownCentralsOnly() {
        connected()
        let out = core.handle(.pairing(Self.a, .numericComparison(42)), now: .zero)
        guard case .event(.pairing(let c, .numericComparison(42)))? = out.first, out.count == 1 else {
            Issue.record("no pairing event: \(out)")
            return
        }
        #expect(c.id == Self.a)
        #expect(core.handle(.pairing(ConnectionID(0x99), .timedOut), now: .zero).isEmpty)
    }

    @Test mutating func reloadWithANewDatabaseIndicatesServiceChangedItself() throws {
        connected()
        // Central A subscribes to Service Changed indications (its CCCD follows the value).
        let sc = core.database.serviceChangedHandle.rawValue + 1
        _ = core.handle(.received(.fixed(Self.a), [0x12, UInt8(sc & 0xFF), UInt8(sc >> 8), 0x02, 0x00]), now: .zero)
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        var services = [ServiceDefinition(id: "new", uuid: 0xBBB0, characteristics: [CharacteristicDefinition(uuid: 0xBBB1, properties: [.read], value: [1])])]
        services.insert(contentsOf: [], at: 0)
        let db = GATTDatabase(deviceName: "gattd", services: services)
        let before = core.database
        let out = core.reload(database: db, payloads: Self.payloads, maxConnections: 2, now: .zero)
        let outcome = try #require(Self.events(out).compactMap { if case .reloaded(let r) = $0 { r } else { nil } }.first)
        #expect(outcome.serviceChanged == .queued(1))
        #expect(outcome.databaseHashes?.new == db.databaseHash)
        let h = db.serviceChangedHandle.rawValue
        // The affected range (Vol 3 Part G §7.1): from the first to the last handle of the services that changed.
        let range = try #require(GATTDatabase.changedRange(from: before.serviceFingerprints, to: db.serviceFingerprints))
        #expect(range == HandleRange(start: 0x0010, end: 0x002B))
        #expect(outcome.changedRange == range)
        #expect(Self.sends(core.handle(.readyToSend(.fixed(Self.a)), now: .zero)).map(\.1) == [[0x1D, UInt8(h & 0xFF), UInt8(h >> 8)] + range.serviceChangedValue])
        // The same database again: nothing indicated.
        let again = core.reload(database: db, payloads: Self.payloads, maxConnections: 2, now: .zero)
        #expect(Self.events(again).contains(.reloaded(ReloadOutcome(databaseHashes: nil, serviceChanged: nil, advertisingChanged: false))))
        #expect(Self.sends(again).isEmpty)
    }

    @Test mutating func reloadWithNewPayloadsReadvertises() {
        connected()
        _ = core.handle(.advertisingChanged(false), now: .zero)
        _ = core.handle(.advertisingChanged(true), now: .zero)
        var p = Self.payloads
        p.advertisingData = [0x02, 0x01, 0x04]
        let out = core.reload(database: core.database, payloads: p, maxConnections: 2, now: .zero)
        #expect(out.contains(.setAdvertising([AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: p)])))
    }

    @Test mutating func shutdownStopsAdvertisingAndDisconnectsEveryone() {
        core = Peripheral(database: ATTFixture.database(), payloads: Self.payloads, maxConnections: 3)
        connected()
        _ = core.handle(.connected(Self.b, Self.centralB), now: .zero)
        let out = core.shutdown()
        #expect(out == [
            .setAdvertising([]), .disconnect(Self.a, reason: .remoteUserTerminatedConnection), .disconnect(Self.b, reason: .remoteUserTerminatedConnection),
        ])
        #expect(!core.isIdle)
        _ = core.handle(.advertisingChanged(false), now: .zero)
        _ = core.handle(.disconnected(Self.a, reason: .connectionTerminatedByLocalHost), now: .zero)
        let last = core.handle(.disconnected(Self.b, reason: .connectionTerminatedByLocalHost), now: .zero)
        #expect(!last.contains { if case .setAdvertising = $0 { true } else { false } })  // stopping: never again
        #expect(core.isIdle)
    }

    @Test mutating func losingTheControllerDropsEveryConnection() {
        connected()
        let out = core.handle(.lost(reason: "lost the controller"), now: .zero)
        #expect(Self.events(out).contains { if case .disconnected(let c, .connectionTimeout, "lost the controller") = $0 { c.id == Self.a } else { false } })
        #expect(Self.events(out).last == .controllerLost(reason: "lost the controller"))
        #expect(core.connections.isEmpty && core.advertising == .noController && core.address == nil)
        // Nothing is advertised until the controller is back.
        #expect(core.setAdvertisingWanted(true).isEmpty)
    }
}
