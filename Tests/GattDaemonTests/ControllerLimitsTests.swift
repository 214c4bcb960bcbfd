import GattCore
import GattTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// The advertising sets against what the controller can do: the first controller decides
/// whether the config can be served (a config error otherwise, exit 65, naming the set and the
/// bytes); a reload that does not fit is refused; `status` carries the controller.
@Suite(.serialized) struct ControllerLimitsTests {
    static let config = """
        {"name": "sets", "advertising": {"local_name": "SetsA"},
         "advertising_sets": [
           {"id": "beacon", "connectable": false, "scannable": false,
            "ibeacon": {"uuid": "e2c56db5-dffb-48d2-b060-d0f5a71096e0", "major": 7, "minor": 9}},
           {"id": "long", "extended": true, "connectable": false, "scannable": false,
            "manufacturer_data": [{"company_id": 65535, "data": {"hex": "\(String(repeating: "ab", count: 120))"}}]}],
         "services": []}
        """

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static func controller(_ commands: AdvertisingCommandSet) -> ControllerInfo {
        var c = ControllerInfo()
        c.address = BluetoothAddress("C0:FF:EE:00:00:01")!
        c.advertisingCommands = commands
        return c
    }

    func daemon(_ json: String, controller: ControllerInfo) throws -> (PeripheralDaemon, FakeTransport, NIOLockedValueBox<[DaemonRunner.Failure]>) {
        let configuration = try ConfigLoader.load(data: Array(json.utf8)).gatt
        let payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        let transport = FakeTransport(eventLoop: group.next())
        transport.controller = controller
        var options = DaemonOptions()
        options.configName = "sets.json"
        let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, transport: transport, logger: Logger(label: "test"), options: options)
        let failures = NIOLockedValueBox<[DaemonRunner.Failure]>([])
        try group.next().submit { daemon.onFatalError = { f in failures.withLockedValue { $0.append(f) } } }.wait()
        return (daemon, transport, failures)
    }

    @Test func setsThatDoNotFitTheFirstControllerAreAConfigError() throws {
        let (daemon, transport, failures) = try daemon(Self.config, controller: Self.controller(.legacy))
        try daemon.start().wait()
        let f = try #require(failures.withLockedValue { $0 }.first)
        #expect(f.exitCode == 65)
        #expect(f.message == "the controller cannot advertise the config's advertising sets (1 error above); exiting")
        // The core never saw that controller: nothing was asked to advertise.
        #expect(transport.advertisingRequests.isEmpty)
        try daemon.stop().wait()
    }

    @Test func tooManySetsForTheControllerAreAConfigErrorToo() throws {
        let (daemon, transport, failures) = try daemon(Self.config, controller: Self.controller(.extended(sets: 2, maximumDataLength: 1650)))
        try daemon.start().wait()
        #expect(failures.withLockedValue { $0 }.map(\.exitCode) == [65])
        #expect(transport.advertisingRequests.isEmpty)
        try daemon.stop().wait()
    }

    @Test func setsThatFitAreAdvertisedAndStatusCarriesTheController() throws {
        let (daemon, transport, failures) = try daemon(Self.config, controller: Self.controller(.extended(sets: 3, maximumDataLength: 1650)))
        try daemon.start().wait()
        #expect(failures.withLockedValue { $0 }.isEmpty)
        #expect(transport.advertisingRequests.last?.map(\.id) == ["primary", "beacon", "long"])
        let status = try group.next().submit { daemon.status() }.wait()
        // The H4 host advertises every set from the controller's address; the kernel picks a
        // non-connectable set's address itself.
        #expect(status.sets.map(\.address) == [BluetoothAddress("C0:FF:EE:00:00:01")!, BluetoothAddress("C0:FF:EE:00:00:01")!, BluetoothAddress("C0:FF:EE:00:00:01")!])
        let c = try #require(status.controller)
        #expect((c.maximumSets, c.maximumDataLength, c.extendedPDUs, c.setsTakeTurns, c.advertisedByKernel) == (3, 1650, true, false, false))
        try daemon.stop().wait()
    }

    @Test func aReloadThatDoesNotFitIsRefused() throws {
        let (daemon, _, failures) = try daemon(Self.config, controller: Self.controller(.extended(sets: 3, maximumDataLength: 100)))
        try daemon.start().wait()
        // The 120-byte set does not fit 100 bytes per set: fatal at start...
        #expect(failures.withLockedValue { $0 }.count == 1)
        try daemon.stop().wait()

        let (d2, _, f2) = try self.daemon(Self.config, controller: Self.controller(.extended(sets: 3, maximumDataLength: 1650)))
        try d2.start().wait()
        #expect(f2.withLockedValue { $0 }.isEmpty)
        // ... and a reload adding a fourth set to a 3-set controller changes nothing.
        let bigger = Self.config.replacingFirst(
            "\"advertising_sets\": [", with: "\"advertising_sets\": [{\"id\": \"more\", \"connectable\": false, \"scannable\": false, \"manufacturer_data\": [{\"company_id\": 1, \"data\": {\"hex\": \"01\"}}]},")
        let configuration = try ConfigLoader.load(data: Array(bigger.utf8)).gatt
        let payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
        #expect {
            try d2.reload(configuration: configuration, settings: DaemonSettings(), payloads: payloads).wait()
        } throws: { error in
            "\(error)" == "advertising_sets[2]: the controller has 3 advertising sets; this is set 4 of 4 (the primary set \"advertising\" is set 1)"
        }
        #expect(try group.next().submit { d2.status().sets.map(\.id) }.wait() == ["primary", "beacon", "long"])
        try d2.stop().wait()
    }

    @Test func legacyControllersTakeTurnsWithLegacySets() throws {
        let legacyOnly = Self.config.replacingFirst("\"extended\": true", with: "\"extended\": false").replacingFirst(
            String(repeating: "ab", count: 120), with: "abcd")
        let (daemon, transport, failures) = try daemon(legacyOnly, controller: Self.controller(.legacy))
        try daemon.start().wait()
        #expect(failures.withLockedValue { $0 }.isEmpty)
        #expect(transport.advertisingRequests.last?.count == 3)
        #expect(try group.next().submit { daemon.status().controller?.setsTakeTurns }.wait() == true)
        // The H4 host advertises every set from the controller's address.
        #expect(try group.next().submit { daemon.status().sets.map { $0.address != nil } }.wait() == [true, true, true])
        // Through the kernel, a non-connectable set's address is the kernel's choice: not reported.
        try daemon.stop().wait()
        var kernelController = Self.controller(.legacy)
        kernelController.advertisingOwner = .stack(
            limits: AdvertisingLimits(numberOfSets: 5, maximumDataLength: 31, extendedPDUs: false), summary: "legacy advertising by the kernel")
        kernelController.nonConnectableSetsUseControllerAddress = false
        let (kernelDaemon, _, _) = try self.daemon(legacyOnly, controller: kernelController)
        try kernelDaemon.start().wait()
        #expect(try group.next().submit { kernelDaemon.status().sets.map { $0.address != nil } }.wait() == [true, false, false])
        try kernelDaemon.stop().wait()
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let r = range(of: target) else { return self }
        return replacingCharacters(in: r, with: replacement)
    }
}
