#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GattCore
import Logging
import Testing

@testable import GattDaemon

/// `BondCoordinator`: which files a bond's life touches, and which connection is which bond.
@Suite struct BondCoordinatorTests {
    let state: String
    let logger = Logger(label: "test")

    init() {
        state = NSTemporaryDirectory() + "gattd-coordinator-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
    }

    static let a = BondStoreTests.full.bond
    static let b = BondStoreTests.minimal.bond
    static let hash: [UInt8] = Array(repeating: 0x11, count: 16)

    /// An evicted bond (max_bonds) takes its GATT state file with it; the kept one keeps its own.
    @Test func evictionRemovesTheBondsGATTState() throws {
        var c = BondCoordinator(stateDirectory: state, logger: logger)
        _ = c.save(Self.a, maxBonds: 1)
        c.bonded(ConnectionID(1), identity: Self.a.address, signs: false)
        let committed = c.commitClientState(GATTClientState(clientConfigurations: ["hr": 1], databaseHash: Self.hash), of: ConnectionID(1))
        #expect(committed)
        #expect(ClientStateStore(stateDirectory: state).load().states.keys.sorted { $0.description < $1.description } == [Self.a.address])
        let kept = c.save(Self.b, maxBonds: 1)
        #expect(kept == [Self.b])
        #expect(ClientStateStore(stateDirectory: state).load().states.isEmpty, "evicted with its bond")
        #expect(c.clientStates.isEmpty)
    }

    /// A connection that is not a bonded central keeps nothing, and its write succeeds.
    @Test func anUnrecognisedConnectionKeepsNoState() {
        var c = BondCoordinator(stateDirectory: state, logger: logger)
        let committed = c.commitClientState(GATTClientState(clientConfigurations: ["hr": 1], databaseHash: Self.hash), of: ConnectionID(7))
        #expect(committed)
        #expect(ClientStateStore(stateDirectory: state).load().states.isEmpty)
    }

    /// Recognised once, on an encrypted link, by identity address; its kept state comes back;
    /// a closed link is forgotten.
    @Test func aBondedCentralIsRecognisedOnceWithItsState() {
        var c = BondCoordinator(stateDirectory: state, logger: logger)
        _ = c.save(Self.b, maxBonds: nil)
        let kept = GATTClientState(clientConfigurations: ["hr": 2], databaseHash: Self.hash)
        c.save(Self.b.address, kept)
        let id = ConnectionID(3)
        let unencrypted = c.recognise(id, address: Self.b.address, encrypted: false, resolvedIsEnough: false)
        #expect(unencrypted == nil, "not encrypted")
        let found = c.recognise(id, address: Self.b.address, encrypted: true, resolvedIsEnough: false)
        #expect(found?.identity == Self.b.address)
        #expect(found?.state == kept)
        let again = c.recognise(id, address: Self.b.address, encrypted: true, resolvedIsEnough: false)
        #expect(again == nil, "once per link")
        c.closed(id)
        #expect(c.bondedConnections.isEmpty)
    }

    /// Loaded at start against a database that changed since: a Service Changed is owed, durably.
    @Test func aChangedDatabaseAtStartOwesServiceChanged() throws {
        var first = BondCoordinator(stateDirectory: state, logger: logger)
        _ = first.save(Self.b, maxBonds: nil)
        let old = try ConfigLoader.load(data: Array(#"{"name": "x", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"]}]}]}"#.utf8)).gatt
        let new = try ConfigLoader.load(data: Array(#"{"name": "x", "services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["notify"]}]}]}"#.utf8)).gatt
        let oldDB = old.makeDatabase(), newDB = new.makeDatabase()
        first.loadClientStates(serving: oldDB)
        first.save(Self.b.address, GATTClientState(databaseHash: oldDB.databaseHash))
        var second = BondCoordinator(stateDirectory: state, logger: logger)
        _ = second.load()
        second.loadClientStates(serving: newDB)
        #expect(second.clientStates[Self.b.address]?.serviceChangedOwed != nil)
        #expect(ClientStateStore(stateDirectory: state).load().states[Self.b.address]?.serviceChangedOwed != nil, "durably")
    }
}
