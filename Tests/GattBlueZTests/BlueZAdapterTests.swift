import GattBlueZ
import GattCore
import GattDBus
import GattTransport
import NIOPosix
import Testing

/// What gattd reads of an adapter from bluetoothd's object tree, on the shapes BlueZ 5.66 (the
/// Debian 12 one) answers, and the probe over a real bus with a stand-in bluetoothd.
@Suite struct BlueZAdapterTests {
    /// `GetManagedObjects` as BlueZ 5.66 answers it for a 5.2 controller (hci0) and an adapter
    /// with no advertising manager (hci1), plus a device (which is not an adapter).
    static let objects: DBusValue = .array(element: "{oa{sa{sv}}}", [
        .dictEntry(.objectPath("/org/bluez"), .array(element: "{sa{sv}}", [
            .dictEntry(.string("org.bluez.AgentManager1"), .properties([:])),
        ])),
        .dictEntry(.objectPath("/org/bluez/hci0"), .array(element: "{sa{sv}}", [
            .dictEntry(.string("org.bluez.Adapter1"), .properties([
                "Address": .string("00:AA:01:00:00:00"), "AddressType": .string("public"), "Name": .string("BlueZ 5.66"),
                "Alias": .string("BlueZ 5.66"), "Powered": .boolean(true), "Modalias": .string("usb:v1D6Bp0246d0542"),
                "Roles": .strings(["central", "peripheral"]),
            ])),
            .dictEntry(.string("org.bluez.GattManager1"), .properties([:])),
            .dictEntry(.string("org.bluez.LEAdvertisingManager1"), .properties([
                "ActiveInstances": .byte(0), "SupportedInstances": .byte(2),
                "SupportedIncludes": .strings(["tx-power", "appearance", "local-name"]),
                "SupportedSecondaryChannels": .strings(["1M", "2M", "Coded"]),
                "SupportedFeatures": .strings(["CanSetTxPower", "HardwareOffload"]),
                "SupportedCapabilities": .properties(["MaxAdvLen": .byte(251), "MaxScnRspLen": .byte(251), "MinTxPower": .int16(-127), "MaxTxPower": .int16(20)]),
            ])),
        ])),
        .dictEntry(.objectPath("/org/bluez/hci1"), .array(element: "{sa{sv}}", [
            .dictEntry(.string("org.bluez.Adapter1"), .properties(["Address": .string("00:AA:01:01:00:01"), "Powered": .boolean(false)])),
        ])),
        .dictEntry(.objectPath("/org/bluez/hci0/dev_00_AA_01_01_00_01"), .array(element: "{sa{sv}}", [
            .dictEntry(.string("org.bluez.Device1"), .properties(["Address": .string("00:AA:01:01:00:01")])),
        ])),
    ])

    @Test func aBlueZ566AdapterAndWhatFitsIt() throws {
        let a = try BlueZAdapter.find(0, in: Self.objects)
        #expect(a.address.description == "00:AA:01:00:00:00")
        #expect(a.bluetoothdVersion == "5.66")
        #expect(a.powered && a.gattManager)
        #expect(a.roles == ["central", "peripheral"])
        #expect(a.advertising?.supportedInstances == 2)
        #expect(a.advertising?.maximumDataLength == 251)
        #expect(a.limits == AdvertisingLimits(numberOfSets: 2, maximumDataLength: 251, extendedPDUs: true, setsTakeTurns: false))
        let report = try #require(a.probe.report)
        #expect(report.first == "controller 00:AA:01:00:00:00 at bluez:hci0, through bluetoothd 5.66 on the system bus")
        #expect(report.contains("  advertising  2 instances (0 in use by others), 251 bytes of data each"))
        #expect(report.contains("  sets         up to 2 on the air at once; 251 bytes of data per set; extended PDUs yes"))
        // --check-config --probe checks the config's sets against these limits.
        #expect(a.probe.controller?.limits == a.limits)
    }

    @Test func anAdapterWithoutAnAdvertisingManagerTakesNoSet() throws {
        let a = try BlueZAdapter.find(1, in: Self.objects)
        #expect(a.advertising == nil && !a.gattManager && !a.powered)
        #expect(a.limits.numberOfSets == 0)
        #expect(a.probe.report?.contains("  advertising  no LEAdvertisingManager1 on this adapter") == true)
    }

    @Test func aMissingAdapterNamesThoseThereAre() {
        #expect(throws: BlueZError.noAdapter(2, present: ["hci0", "hci1"])) { try BlueZAdapter.find(2, in: Self.objects) }
        #expect(BlueZError.noAdapter(2, present: ["hci0", "hci1"]).description == "bluetoothd has no adapter hci2 (it has hci0, hci1)")
        #expect(throws: BlueZError.noAdapter(0, present: [])) { try BlueZAdapter.find(0, in: .array(element: "{oa{sa{sv}}}", [])) }
    }

    @Test func theProbeAsksBluetoothdOnTheBus() throws {
        let bus = try PrivateBus()
        let fake = try bus.connect()
        defer { fake.close() }
        // A stand-in bluetoothd: owns org.bluez and answers GetManagedObjects.
        let owned = Delivery<Result<[DBusValue], DBusError>>()
        fake.export(prefix: "/") { call in
            guard call.interface == "org.freedesktop.DBus.ObjectManager", call.member == "GetManagedObjects", call.path == "/" else {
                return fake.reply(call, .failure(.unknownMethod(call.description)))
            }
            fake.reply(call, .success([Self.objects]))
        }
        fake.call(DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName", [.string("org.bluez"), .uint32(0)])) { owned.deliver($0) }
        #expect(try #require(owned.wait()).get() == [.uint32(1)])  // primary owner
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let probe = try BlueZProbe.probe(0, bus: .address(bus.address), eventLoop: group.next(), timeout: .seconds(10)).wait()
        #expect(probe.controller?.address.description == "00:AA:01:00:00:00")
        #expect(probe.report?.first?.hasPrefix("controller 00:AA:01:00:00:00 at bluez:hci0") == true)
        #expect(throws: ControllerProbeFailure.self) { try BlueZProbe.probe(3, bus: .address(bus.address), eventLoop: group.next(), timeout: .seconds(10)).wait() }
    }

    @Test func theDefaultTransportAsksTheBusWhetherBluetoothdRuns() throws {
        let bus = try PrivateBus()
        #expect(!BlueZ.isRunning(bus: .address(bus.address)))
        #expect(TransportSpec.chosen(bluetoothdRunning: false).spec == .kernel(controller: 0))
        let fake = try bus.connect()
        defer { fake.close() }
        let owned = Delivery<Result<[DBusValue], DBusError>>()
        fake.call(DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName", [.string("org.bluez"), .uint32(0)])) { owned.deliver($0) }
        #expect(try #require(owned.wait()).get() == [.uint32(1)])
        #expect(BlueZ.isRunning(bus: .address(bus.address)))
        let (spec, reason) = TransportSpec.chosen(bluetoothdRunning: true)
        #expect(spec == .bluez(controller: 0))
        #expect(reason.hasPrefix("bluetoothd is running: gattd serves beside it"))
        // No bus at all: not running.
        #expect(!BlueZ.isRunning(bus: .address("unix:path=/nonexistent/gattd-bus")))
    }

    @Test func noBluetoothdIsSaidAsSuch() throws {
        let bus = try PrivateBus()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        do {
            _ = try BlueZProbe.probe(0, bus: .address(bus.address), eventLoop: group.next(), timeout: .seconds(10)).wait()
            Issue.record("probed without bluetoothd")
        } catch {
            #expect("\(error)".hasPrefix("bluetoothd is not running (org.bluez is not on the system bus)"))
        }
    }
}
