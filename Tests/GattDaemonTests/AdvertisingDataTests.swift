import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// The `advertising_data` op through the daemon: the sets handed to the transport again with
/// the new payloads, `status` showing them, refusals leaving everything as it was, and what a
/// reload and a runtime service do with run-time data.
@Suite(.serialized) struct AdvertisingDataTests {
    static let config = """
        {"name": "fake", "advertising": {"manufacturer_data": [{"company_id": 65535, "data": {"hex": "00"}}]},
         "advertising_sets": [{"id": "beacon", "connectable": false, "scannable": false,
           "service_data": [{"uuid": "FEAA", "data": {"hex": "10f6"}}]}],
         "services": [{"uuid": "180D", "characteristics": [{"id": "hr", "uuid": "2A37", "properties": ["notify"], "value": {"hex": "00"}}]}]}
        """
    static let counter = AdvertisingDataUpdate(manufacturerData: [.init(companyID: 0xFFFF, data: [0x2A, 0x00])])

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let transport: FakeTransport
    let daemon: PeripheralDaemon
    let configuration: GattConfiguration

    init() throws {
        configuration = try ConfigLoader.load(data: Array(Self.config.utf8)).gatt
        transport = FakeTransport(eventLoop: group.next())
        daemon = PeripheralDaemon(
            configuration: configuration, payloads: try configuration.advertisingPayloads(), transport: transport, logger: Logger(label: "test"))
    }

    func on<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T { try group.next().submit(body).wait() }

    func run(_ command: ControlCommand) throws -> ControlReply {
        try on {
            guard case .now(let reply) = ControlDispatcher.execute(command, on: self.daemon) else { return .failure(ControlError(.busy, "later")) }
            return reply
        }
    }

    func status(_ id: String) throws -> ControlStatus.AdvertisingSetStatus? {
        try on { self.daemon.status().sets.first { $0.id == id } }
    }

    func started() throws {
        try daemon.start().wait()
        try transport.report(.advertisingChanged(true, set: "primary"), .advertisingChanged(true, set: "beacon"))
    }

    @Test func thePrimarysNewDataGoesToTheTransportAndStatus() throws {
        try started()
        let before = transport.advertisingRequests.count
        #expect(try run(.advertisingData(set: nil, update: Self.counter)) == .success)
        let request = try #require(transport.advertisingRequests.last)
        #expect(transport.advertisingRequests.count == before + 1)
        #expect(request.map(\.id) == ["primary", "beacon"], "every set, the beacon as it was")
        let adv = try #require(request.first?.payloads.advertisingData)
        #expect(adv.suffix(6) == [0x05, 0xFF, 0xFF, 0xFF, 0x2A, 0x00])
        #expect(try status("primary")?.advertisingData == adv)
        #expect(try status("primary")?.advertising == true)
        // The same data again: nothing for the transport.
        #expect(try run(.advertisingData(set: "primary", update: Self.counter)) == .success)
        #expect(transport.advertisingRequests.count == before + 1)
        try daemon.stop().wait()
    }

    @Test func anotherSetsNewData() throws {
        try started()
        #expect(try run(.advertisingData(set: "beacon", update: AdvertisingDataUpdate(serviceData: []))) == .success)
        let beacon = try #require(transport.advertisingRequests.last?.first { $0.id == "beacon" })
        #expect(beacon.payloads.advertisingData == [0x02, 0x01, 0x06])
        #expect(try status("beacon")?.advertisingData == [0x02, 0x01, 0x06])
        try daemon.stop().wait()
    }

    /// Too long: `value_too_long` naming the field and the bytes; nothing changes.
    @Test func dataThatDoesNotFitChangesNothing() throws {
        try started()
        let before = transport.advertisingRequests.count
        let statusBefore = try status("beacon")
        let long = AdvertisingDataUpdate(manufacturerData: [.init(companyID: 1, data: Array(repeating: 0xAB, count: 30))])
        let reply = try run(.advertisingData(set: "beacon", update: long))
        guard case .failure(let error) = reply else {
            Issue.record("expected a failure, got \(reply)")
            return
        }
        #expect(error.code == .valueTooLong)
        #expect(error.message.hasPrefix("the new data does not fit, the set is unchanged: advertising_sets[0].manufacturer_data[0]: needs 34 bytes"))
        #expect(transport.advertisingRequests.count == before)
        #expect(try status("beacon") == statusBefore)
        try daemon.stop().wait()
    }

    /// The controller's data length, as the transport knows it, is checked too.
    @Test func theTransportsLimitIsChecked() throws {
        // A controller taking 14 bytes per set: the config's primary (14 bytes) fits, the counter's 15 do not.
        var controller = ControllerInfo()
        controller.advertisingCommands = .extended(sets: 4, maximumDataLength: 14)
        transport.controller = controller
        try started()
        let reply = try run(.advertisingData(set: nil, update: Self.counter))
        #expect(reply == .failure(ControlError(.valueTooLong,
            "the new data does not fit, the set is unchanged: advertising: the advertising data is 15 bytes; the controller takes at most 14 bytes per set")))
        try daemon.stop().wait()
    }

    /// The same error as the `advertise` op gives.
    @Test func anUnknownSet() throws {
        try started()
        let message = #"no advertising set "nope"; the sets are "primary", "beacon""#
        #expect(try run(.advertisingData(set: "nope", update: Self.counter)) == .failure(ControlError(.invalidValue, message)))
        #expect(try run(.advertise(enable: false, set: "nope")) == .failure(ControlError(.invalidValue, message)))
        try daemon.stop().wait()
    }

    /// A reload keeps the run-time data of a field the config did not change, and drops it
    /// where the config changed it.
    @Test func aReloadKeepsRunTimeDataUnlessTheConfigChangedIt() throws {
        try started()
        #expect(try run(.advertisingData(set: nil, update: Self.counter)) == .success)
        let counted = try status("primary")?.advertisingData
        var renamed = configuration
        renamed.services = []
        try daemon.reload(configuration: renamed, settings: DaemonSettings(), payloads: try renamed.advertisingPayloads()).wait()
        #expect(try status("primary")?.advertisingData == counted)
        var edited = renamed
        edited.advertising.manufacturerData = [.init(companyID: 0xFFFF, data: [0x77])]
        try daemon.reload(configuration: edited, settings: DaemonSettings(), payloads: try edited.advertisingPayloads()).wait()
        #expect(try status("primary")?.advertisingData.suffix(5) == [0x04, 0xFF, 0xFF, 0xFF, 0x77])
        try daemon.stop().wait()
    }

    /// A service added at run time leaves the advertising sets as they are.
    @Test func aRuntimeServiceKeepsTheSets() throws {
        try started()
        #expect(try run(.advertisingData(set: "beacon", update: AdvertisingDataUpdate(serviceData: []))) == .success)
        let service = try JSONParser.parse(Array(#"{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "value": {"hex": "64"}}]}"#.utf8))
        guard case .services = try run(.addService(service: service)) else {
            Issue.record("add_service failed")
            return
        }
        #expect(try on { self.daemon.status().sets.map(\.id) } == ["primary", "beacon"])
        #expect(try status("beacon")?.advertisingData == [0x02, 0x01, 0x06])
        try daemon.stop().wait()
    }
}
