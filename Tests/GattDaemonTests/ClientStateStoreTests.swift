#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GattCore
import Testing

@testable import GattDaemon

/// Bonded clients' GATT state files: exact round trips, a pending Service Changed kept,
/// corruption set aside, and the bond store not confused by them.
@Suite struct ClientStateStoreTests {
    let dir: String
    let state: String
    let store: ClientStateStore
    static let address = BluetoothAddress("C0:00:00:00:00:01")!

    init() {
        state = NSTemporaryDirectory() + "gattd-gatt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
        dir = state + "/bonds"
        store = ClientStateStore(stateDirectory: state)
    }

    func names() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }

    @Test func roundTripWithAPendingServiceChanged() throws {
        #expect(store.load().states.isEmpty)
        let s = GATTClientState(
            clientConfigurations: ["id:hr": 1, "uuid:2A05#0": 2, "id:odd\"\\name": 3], clientFeatures: [0x01],
            databaseHash: Array(0..<16), serviceChangedOwed: HandleRange(start: 0x37, end: 0x39))
        try store.save(Self.address, s)
        let loaded = store.load()
        #expect(loaded.problems.isEmpty)
        #expect(loaded.states == [Self.address: s])
        #expect(names() == ["C0:00:00:00:00:01.gatt"])
        // Acknowledged: the bytes on disk are the state (what a restart after kill -9 reads).
        let text = try String(contentsOfFile: dir + "/C0:00:00:00:00:01.gatt", encoding: .utf8)
        #expect(text.contains("\"service_changed\":[55,57]"))
        // Confirmed: no debt left.
        var aware = s
        aware.serviceChangedOwed = nil
        try store.save(Self.address, aware)
        #expect(store.load().states[Self.address]?.serviceChangedOwed == nil)
    }

    @Test func corruptFileIsSetAsideAndTheBondStoreIgnoresStateFiles() throws {
        try store.save(Self.address, GATTClientState(databaseHash: [1]))
        try store.saveLayout([ServiceFingerprint(start: 1, end: 5, digest: [0xAB])])
        #expect(store.loadLayout() == [ServiceFingerprint(start: 1, end: 5, digest: [0xAB])])
        #expect(BondStore(stateDirectory: state).load().problems.isEmpty, "the bond store leaves .gatt files alone")
        _ = FileManager.default.createFile(atPath: dir + "/C0:00:00:00:00:02.gatt", contents: Data("{\"version\":1,\"cccd\":{\"x\":7}}".utf8))
        let loaded = store.load()
        #expect(loaded.states.keys.map(\.description) == ["C0:00:00:00:00:01"])
        #expect(loaded.problems.count == 1)
        #expect(names().contains { $0.hasPrefix("C0:00:00:00:00:02.gatt.corrupt-") })
    }

    @Test func decodingIsStrict() {
        let good = "{\"version\":1,\"database_hash\":\"01\",\"client_features\":\"01\",\"cccd\":{\"id:a\":1}}"
        #expect(ClientStateCodec.decode(Array(good.utf8)) != nil)
        for bad in [
            "{\"version\":2,\"database_hash\":\"01\",\"client_features\":\"01\",\"cccd\":{}}",
            "{\"version\":1,\"database_hash\":\"0\",\"client_features\":\"01\",\"cccd\":{}}",
            "{\"version\":1,\"database_hash\":\"01\",\"client_features\":\"\",\"cccd\":{}}",
            "{\"version\":1,\"database_hash\":\"01\",\"client_features\":\"01\",\"cccd\":{\"a\":4}}",
            "{\"version\":1,\"database_hash\":\"01\",\"client_features\":\"01\",\"cccd\":{},\"service_changed\":[9,8]}",
            "{\"version\":1,\"database_hash\":\"01\",\"client_features\":\"01\",\"cccd\":{},\"service_changed\":[0,8]}",
        ] {
            #expect(ClientStateCodec.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
