#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GattControlProtocol
import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// State restoration: runtime services (same handles), sets turned off and run-time
/// advertising data come back when a new daemon starts on the same state directory; a
/// removed service stays removed; the switch turns it all off.
@Suite(.serialized) struct StateRestorationTests {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let state: String
    static let battery = #"{"id": "battery", "uuid": "180F", "characteristics": [{"id": "level", "uuid": "2A19", "properties": ["read"], "value": {"hex": "64"}}]}"#
    static let extra = #"{"id": "extra", "uuid": "FFF0", "characteristics": [{"uuid": "FFF1", "properties": ["read"]}]}"#

    init() {
        state = NSTemporaryDirectory() + "gattd-restore-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(state, 0o755)
    }

    /// A daemon on `state` (restoration `enabled`) around a fresh fake transport, started.
    func daemon(config: String = AdvertisingDataTests.config, enabled: Bool = true) throws -> (PeripheralDaemon, FakeTransport) {
        let file = try ConfigLoader.load(data: Array(config.utf8))
        let transport = FakeTransport(eventLoop: group.next())
        var options = DaemonOptions()
        options.stateDirectory = state
        options.restoresState = enabled
        let d = PeripheralDaemon(
            configuration: file.gatt, settings: file.settings, payloads: try file.gatt.advertisingPayloads(), transport: transport,
            logger: Logger(label: "test"), options: options)
        try d.start().wait()
        return (d, transport)
    }

    func run(_ command: ControlCommand, on d: PeripheralDaemon) throws -> ControlReply {
        try group.next().submit {
            guard case .now(let reply) = ControlDispatcher.execute(command, on: d) else { return .failure(ControlError(.busy, "later")) }
            return reply
        }.wait()
    }

    func services(_ d: PeripheralDaemon) throws -> [ControlService] {
        try group.next().submit { d.services.list(d.core.database) }.wait()
    }

    func add(_ json: String, on d: PeripheralDaemon) throws -> ControlService {
        guard case .services(let s) = try run(.addService(service: try JSONParser.parse(Array(json.utf8))), on: d), let added = s.first else {
            throw ControlError(.invalidValue, "add_service failed")
        }
        return added
    }

    @Test func aRuntimeServiceComesBackAtItsHandlesAndARemovedOneStaysRemoved() throws {
        let (first, _) = try daemon()
        let battery = try add(Self.battery, on: first)
        let extra = try add(Self.extra, on: first)
        #expect(!battery.restored)
        #expect(try run(.removeService(id: "battery"), on: first) == .success)
        try first.stop().wait()

        let (second, _) = try daemon()
        let listed = try services(second)
        #expect(listed.first { $0.id == "battery" } == nil, "removed for good")
        let back = try #require(listed.first { $0.id == "extra" })
        #expect(back.start == extra.start && back.end == extra.end, "same handles")
        #expect(back.runtime && back.restored)
        // Its characteristic is served at the same value handle.
        let db = try group.next().submit { second.database }.wait()
        #expect(db.services.contains { $0.id == "extra" && Int($0.handle.rawValue) == extra.start })
        try second.stop().wait()
    }

    @Test func setsTurnedOffAndRunTimeDataComeBack() throws {
        let (first, _) = try daemon()
        #expect(try run(.advertise(enable: false, set: "beacon"), on: first) == .success)
        #expect(try run(.advertisingData(set: nil, update: AdvertisingDataTests.counter), on: first) == .success)
        try first.stop().wait()

        let (second, transport) = try daemon()
        let request = try #require(transport.advertisingRequests.last)
        #expect(request.map(\.id) == ["primary"], "the beacon stays off")
        #expect(request.first?.payloads.advertisingData.suffix(6) == [0x05, 0xFF, 0xFF, 0xFF, 0x2A, 0x00], "the run-time data")
        #expect(try run(.advertise(enable: true, set: "beacon"), on: second) == .success)
        try second.stop().wait()
        let (third, again) = try daemon()
        #expect(again.advertisingRequests.last?.map(\.id) == ["primary", "beacon"], "on again, kept too")
        try third.stop().wait()
    }

    @Test func theSwitchTurnsItOff() throws {
        let (first, _) = try daemon(enabled: false)
        _ = try add(Self.extra, on: first)
        #expect(try run(.advertise(enable: false, set: "beacon"), on: first) == .success)
        try first.stop().wait()
        #expect(!FileManager.default.fileExists(atPath: state + "/restore.json"), "nothing written")
        let (second, transport) = try daemon()
        #expect(try services(second).allSatisfy { !$0.runtime })
        #expect(transport.advertisingRequests.last?.map(\.id) == ["primary", "beacon"])
        try second.stop().wait()
    }

    @Test func theConfigCanTurnItOff() throws {
        let (first, _) = try daemon()
        _ = try add(Self.extra, on: first)
        try first.stop().wait()
        let off = AdvertisingDataTests.config.replacingOccurrences(of: #"{"name": "fake","#, with: #"{"name": "fake", "state_restoration": false,"#)
        #expect(off != AdvertisingDataTests.config)
        let (second, _) = try daemon(config: off)
        #expect(try services(second).allSatisfy { !$0.runtime })
        try second.stop().wait()
    }

    /// A SIGHUP reload keeps the runtime services at their handles.
    @Test func aReloadKeepsRuntimeServices() throws {
        let (d, _) = try daemon()
        let extra = try add(Self.extra, on: d)
        let file = try ConfigLoader.load(data: Array(AdvertisingDataTests.config.utf8))
        try d.reload(configuration: file.gatt, settings: file.settings, payloads: try file.gatt.advertisingPayloads()).wait()
        let back = try #require(try services(d).first { $0.id == "extra" })
        #expect(back.start == extra.start)
        try d.stop().wait()
    }

    /// A service whose saved handle the config's services now reach is put after them.
    @Test func aServiceTheConfigNowOverlapsMoves() throws {
        let (first, _) = try daemon()
        let extra = try add(Self.extra, on: first)
        try first.stop().wait()
        let bigger = AdvertisingDataTests.config.replacingOccurrences(
            of: #"{"uuid": "180D", "characteristics": [{"id": "hr""#,
            with: #"{"uuid": "1810", "characteristics": [{"uuid": "2A35", "properties": ["read"]}, {"uuid": "2A36", "properties": ["read"]}]}, {"uuid": "180D", "characteristics": [{"id": "hr""#)
        #expect(bigger != AdvertisingDataTests.config)
        let (second, _) = try daemon(config: bigger)
        let moved = try #require(try services(second).first { $0.id == "extra" })
        #expect(moved.start > extra.start)
        try second.stop().wait()
    }

    @Test func theFileRoundTripsAndACorruptOneIsSetAside() throws {
        var s = RestoredState()
        s.services = [.init(start: 0x30, definition: JSONText(try JSONParser.parse(Array(Self.extra.utf8))), id: "extra")]
        s.setAdvertising(false, set: "beacon")
        s.advertisingData["primary"] = AdvertisingDataTests.counter
        #expect(RestoredStateCodec.decode(RestoredStateCodec.encode(s)) == s)
        #expect(RestoredStateCodec.decode(Array("{\"version\":2}".utf8)) == nil)
        _ = FileManager.default.createFile(atPath: state + "/restore.json", contents: Data("not json".utf8))
        var c = RestorationCoordinator(stateDirectory: state, enabled: true, logger: Logger(label: "test"))
        #expect(c.load().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state + "/restore.json"), "set aside")
    }
}
