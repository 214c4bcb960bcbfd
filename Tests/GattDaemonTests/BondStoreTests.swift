#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GattCore
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// The bond store: exact round trips, file mode, corruption set aside, leftovers removed.
@Suite struct BondStoreTests {
    static let full = StoredBond(
        bond: Bond(
            address: BluetoothAddress("00:1B:DC:01:02:03")!, addressType: .public, longTermKey: Array(0x00...0x0F), ediv: 0x1234,
            rand: 0xFEDC_BA98_7654_3210, keySize: 7, authenticated: true, secureConnections: false, peerIRK: Array(0x10...0x1F),
            peerCSRK: Array(0x20...0x2F),
            localIdentity: SMPIdentity(irk: Array(0x30...0x3F), address: BluetoothAddress("D0:AA:BB:CC:DD:EE")!, addressType: .random),
            localCSRK: Array(0x40...0x4F)),
        created: 1_790_000_000, peerSignCounter: 7, lastSeen: 1_790_000_500)
    static let minimal = StoredBond(
        bond: Bond(address: BluetoothAddress("C4:11:22:33:44:55")!, addressType: .random, longTermKey: nil, keySize: 16, authenticated: false, secureConnections: true),
        created: 1_790_000_001)

    let dir: String
    let store: BondStore

    init() {
        let state = NSTemporaryDirectory() + "gattd-bonds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
        dir = state + "/bonds"
        store = BondStore(stateDirectory: state)
    }

    func names() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }

    @Test func roundTripOfEveryFieldWithMode0600() throws {
        #expect(store.load().bonds.isEmpty, "no directory yet: no bonds")
        try store.save(Self.minimal)
        try store.save(Self.full)
        let loaded = store.load()
        #expect(loaded.problems.isEmpty)
        #expect(loaded.bonds == [Self.full, Self.minimal], "oldest first")
        #expect(names() == ["00:1B:DC:01:02:03.json", "C4:11:22:33:44:55.json"])
        var st = stat()
        #expect(stat(dir + "/00:1B:DC:01:02:03.json", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(stat(dir, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let text = try String(contentsOfFile: dir + "/C4:11:22:33:44:55.json", encoding: .utf8)
        #expect(text == #"{"version":1,"address":"C4:11:22:33:44:55","address_type":1,"ediv":0,"rand":0,"key_size":16,"authenticated":false,"secure_connections":true,"created":1790000001}"# + "\n")
        // A second save replaces the file; remove deletes it.
        var newer = Self.full
        newer.created += 5
        try store.save(newer)
        try store.remove(Self.minimal.bond.address)
        try store.remove(Self.minimal.bond.address)  // already gone: fine
        #expect(store.load().bonds == [newer])
    }

    @Test func corruptFilesAreSetAsideAndLeftoversRemoved() throws {
        try store.save(Self.full)
        _ = FileManager.default.createFile(atPath: dir + "/11:22:33:44:55:66.json", contents: Data("{\"version\":1,".utf8))
        _ = FileManager.default.createFile(atPath: dir + "/11:22:33:44:55:77.json.tmp-99", contents: Data("{".utf8))
        let loaded = store.load()
        #expect(loaded.bonds == [Self.full])
        #expect(loaded.problems.count == 2, "\(loaded.problems)")
        #expect(loaded.problems.first?.contains("11:22:33:44:55:66.json is not a valid bond; set aside as") == true, "\(loaded.problems)")
        #expect(loaded.problems.last == "removed \(dir)/11:22:33:44:55:77.json.tmp-99, left over from an interrupted save")
        #expect(names().count == 2)
        #expect(names().contains { $0.hasPrefix("11:22:33:44:55:66.json.corrupt-") })
        #expect(store.load().problems.isEmpty, "set aside once")
    }

    @Test func decodingIsStrict() {
        let good = String(decoding: BondCodec.encode(Self.full), as: UTF8.self)
        #expect(BondCodec.decode(Array(good.utf8)) == Self.full)
        let broken = [
            good.replacingOccurrences(of: "\"key_size\":7", with: "\"key_size\":6"),
            good.replacingOccurrences(of: "\"ltk\":\"000102030405060708090a0b0c0d0e0f\"", with: "\"ltk\":\"0001\""),
            good.replacingOccurrences(of: "\"version\":1", with: "\"version\":2"),
            good.replacingOccurrences(of: "\"authenticated\":true", with: "\"authenticated\":1"),
            good.replacingOccurrences(of: ",\"local_address\":\"D0:AA:BB:CC:DD:EE\"", with: ""),
            good.replacingOccurrences(of: "00:1B:DC:01:02:03", with: "not an address"),
            good.replacingOccurrences(of: "\"peer_sign_counter\":7", with: "\"peer_sign_counter\":4294967296"),
            good.replacingOccurrences(of: "\"peer_sign_counter\":7", with: "\"peer_sign_counter\":-1"),
            good.replacingOccurrences(of: "\"last_seen\":1790000500", with: "\"last_seen\":\"yesterday\""),
        ]
        for b in broken {
            #expect(b != good)
            #expect(BondCodec.decode(Array(b.utf8)) == nil, "\(b)")
        }
    }
}

/// The daemon and its bond store: bonds loaded into the transport at start, a bonded
/// pairing saved before it is logged complete, `max_bonds` evicting the oldest.
@Suite struct DaemonBondTests {
    @Test func bondsAreLoadedAtStartSavedOnPairingAndEvicted() throws {
        let state = NSTemporaryDirectory() + "gattd-daemon-bonds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
        let store = BondStore(stateDirectory: state)
        try store.save(BondStoreTests.full)
        let file = try ConfigLoader.load(data: Array(#"{"name": "fake", "security": {"max_bonds": 1}}"#.utf8))
        let payloads = try file.gatt.advertisingPayloads()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let transport = FakeTransport(eventLoop: group.next())
        var options = DaemonOptions()
        options.stateDirectory = state
        let daemon = PeripheralDaemon(
            configuration: file.gatt, settings: file.settings, payloads: payloads, transport: transport, logger: Logger(label: "test"), options: options)
        try daemon.start().wait()
        #expect(transport.loadedBonds == [BondStoreTests.full.bond])
        let id = ConnectionID(0x40)
        let peer = TransportPeer(address: BondStoreTests.minimal.bond.address, addressType: .random, handle: 0x40)
        try transport.report(.connected(id, peer), .pairing(id, .pairingComplete(BondStoreTests.minimal.bond, bonded: true)))
        #expect(store.load().bonds.map(\.bond) == [BondStoreTests.minimal.bond], "saved; the older bond evicted (max_bonds 1)")
        #expect(transport.loadedBonds == [BondStoreTests.minimal.bond])
        // A pairing without bonding is not kept.
        let other = Bond(address: BluetoothAddress("C4:00:00:00:00:09")!, addressType: .random, longTermKey: nil, keySize: 16, authenticated: false, secureConnections: true)
        try transport.report(.pairing(id, .pairingComplete(other, bonded: false)))
        #expect(store.load().bonds.map(\.bond) == [BondStoreTests.minimal.bond])
        // Unbond: the file, the transport's copy, and the connected central go.
        #expect(try group.next().submit { daemon.unbond(BondStoreTests.minimal.bond.address) }.wait())
        #expect(try !group.next().submit { daemon.unbond(BondStoreTests.minimal.bond.address) }.wait())
        #expect(store.load().bonds.isEmpty)
        #expect(transport.loadedBonds == [])
        #expect(transport.removedBonds == [BondStoreTests.minimal.bond], "the transport forgets it too (kernel: Unpair Device)")
        #expect(transport.disconnects == [id])
        try daemon.stop().wait()
        try group.syncShutdownGracefully()
    }
}

/// Signed writes (Core Spec Vol 3 Part C §10.4): a bonded central's CSRK verifies them on a
/// new link, and the last accepted Sign Counter is kept in its bond file, so a replay is
/// refused, also after a restart.
@Suite struct SignedWriteBondTests {
    static let config = """
        {"name": "fake", "services": [{"uuid": "180D", "characteristics": [
          {"id": "cmd", "uuid": "2A39", "properties": ["authenticated_signed_writes"], "permissions": ["writeable"],
           "value": {"hex": "00"}}]}]}
        """
    static let csrk: [UInt8] = Array(0x20...0x2F)

    /// ATT_SIGNED_WRITE_CMD to `handle` with `value`, signed with `counter`.
    static func signedWrite(_ handle: UInt16, _ value: [UInt8], counter: UInt32) -> [UInt8] {
        let message: [UInt8] = [0xD2, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
        return message + ATTSigning.signature(csrk: csrk, message: message, signCounter: counter)
    }

    @Test func signCounterKeptAcrossLinksAndRestarts() throws {
        let state = NSTemporaryDirectory() + "gattd-signed-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
        let store = BondStore(stateDirectory: state)
        let central = BluetoothAddress("C4:11:22:33:44:55")!
        let bond = Bond(address: central, addressType: .random, longTermKey: Array(0...15), keySize: 16, authenticated: false,
                        secureConnections: true, peerCSRK: Self.csrk)
        try store.save(StoredBond(bond: bond, created: 1_790_000_000, peerSignCounter: 3))
        let configuration = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt
        let payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        var options = DaemonOptions()
        options.stateDirectory = state

        func run(_ body: (PeripheralDaemon, FakeTransport) throws -> Void) throws {
            let transport = FakeTransport(eventLoop: group.next())
            let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: Logger(label: "test"), options: options)
            try daemon.start().wait()
            try body(daemon, transport)
            try daemon.stop().wait()
        }
        let db = configuration.makeDatabase()
        let index = try #require(db.characteristicIndex(named: "cmd"))
        let handle = db[index].valueHandle.rawValue
        let id = ConnectionID(0x40)
        func value(_ daemon: PeripheralDaemon) throws -> [UInt8] {
            try group.next().submit { daemon.database.value(ofCharacteristic: index) }.wait()
        }
        try run { daemon, transport in
            try transport.report(.connected(id, TransportPeer(address: central, addressType: .random, handle: 0x40)))
            try transport.report(.received(.fixed(id), Self.signedWrite(handle, [0x01], counter: 3)))
            #expect(try value(daemon) == [0x00], "counter 3 is not above the stored 3: refused")
            #expect(store.load().bonds.first?.lastSeen == nil)
            try transport.report(.securityChanged(id, .medium, keySize: 16))
            #expect((store.load().bonds.first?.lastSeen ?? 0) >= 1_790_000_000, "last seen when it encrypted")
            try transport.report(.received(.fixed(id), Self.signedWrite(handle, [0x02], counter: 4)))
            #expect(try value(daemon) == [0x02])
            #expect(store.load().bonds.first?.peerSignCounter == 4, "kept in the bond file")
            var forged = Self.signedWrite(handle, [0x03], counter: 5)
            forged[forged.count - 1] ^= 1
            try transport.report(.received(.fixed(id), forged))
            #expect(try value(daemon) == [0x02], "a bad MAC is ignored")
        }
        try run { daemon, transport in
            // After a restart: the replay of counter 4 is refused, 5 accepted.
            try transport.report(.connected(id, TransportPeer(address: central, addressType: .random, handle: 0x40)))
            try transport.report(.received(.fixed(id), Self.signedWrite(handle, [0x04], counter: 4)))
            #expect(try value(daemon) == [0x00])
            try transport.report(.received(.fixed(id), Self.signedWrite(handle, [0x05], counter: 5)))
            #expect(try value(daemon) == [0x05])
            #expect(store.load().bonds.first?.peerSignCounter == 5)
            // Another central (no bond) cannot sign.
            let other = ConnectionID(0x41)
            try transport.report(.connected(other, TransportPeer(address: BluetoothAddress("C4:00:00:00:00:09")!, addressType: .random, handle: 0x41)))
            try transport.report(.received(.fixed(other), Self.signedWrite(handle, [0x06], counter: 9)))
            #expect(try value(daemon) == [0x05])
        }
    }
}
