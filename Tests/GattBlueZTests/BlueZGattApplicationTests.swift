import GattBlueZ
import GattCore
import GattDBus
import Testing

/// gattd's database as BlueZ's GATT application: the object tree bluetoothd registers (paths,
/// UUIDs, flags, handles; GAP, GATT, CCCDs and Extended Properties left to bluetoothd), how
/// calls on it are routed, and the ATT errors as the D-Bus errors bluetoothd turns back into codes.
@Suite struct BlueZGattApplicationTests {
    /// A battery service (notify, encrypted to subscribe, a user description and a
    /// presentation format) and a secondary service it includes, with an authenticated write
    /// and a reliable write (an Extended Properties descriptor).
    static let database = GATTDatabase(deviceName: "gattd", services: [
        ServiceDefinition(id: "battery", uuid: 0x180F, includes: [1], characteristics: [
            CharacteristicDefinition(
                id: "level", uuid: 0x2A19, properties: [.read, .notify, .notifyEncryptionRequired], value: [57], userDescription: "Level",
                descriptors: [DescriptorDefinition(uuid: GATTUUID.presentationFormat, value: [4, 0, 0xAD, 0x27, 1, 0, 0])]),
        ]),
        ServiceDefinition(id: "config", uuid: BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!, isPrimary: false, characteristics: [
            CharacteristicDefinition(
                id: "secret", uuid: 0xFFF1, properties: [.read, .write, .reliableWrite],
                permissions: [.readable, .writeable, .readEncryptionRequired, .writeAuthenticationRequired], valueSource: .persisted),
        ]),
    ])

    @Test func theTreeAsksForGattdsHandles() throws {
        let app = BlueZGattApplication(database: Self.database)
        let db = Self.database
        let battery = db.services[2], config = db.services[3]
        let level = db[battery.characteristics[0]], secret = db[config.characteristics[0]]
        // GAP and GATT are bluetoothd's: two services, two characteristics, two descriptors
        // (the user description and the format; not the CCCD, not Extended Properties).
        #expect(app.objects.map(\.interface) == [
            BlueZGattApplication.serviceInterface, BlueZGattApplication.characteristicInterface,
            BlueZGattApplication.descriptorInterface, BlueZGattApplication.descriptorInterface,
            BlueZGattApplication.serviceInterface, BlueZGattApplication.characteristicInterface,
        ])
        let batteryPath = "/org/gattd/app/service" + hex(battery.handle)
        let s = try #require(app.object(at: batteryPath))
        #expect(s.properties["UUID"] == .string("0000180f-0000-1000-8000-00805f9b34fb"))
        #expect(s.properties["Primary"] == .boolean(true))
        #expect(s.properties["Handle"] == .uint16(battery.handle.rawValue))
        #expect(s.properties["Includes"] == .objectPaths(["/org/gattd/app/service" + hex(config.handle)]))
        let c = try #require(app.object(at: batteryPath + "/char" + hex(level.valueHandle)))
        #expect(c.properties["Handle"] == .uint16(level.valueHandle.rawValue))
        #expect(c.properties["Service"] == .objectPath(batteryPath))
        #expect(c.properties["Flags"] == .strings(["read", "notify", "encrypt-notify"]))
        // The CCCD is at value + 1 in both gattd and bluetoothd, so the descriptors after it line up.
        #expect(level.cccdHandle?.rawValue == level.valueHandle.rawValue + 1)
        let descriptors = app.objects.filter { $0.interface == BlueZGattApplication.descriptorInterface }
        #expect(descriptors.map(\.handle.rawValue) == [level.valueHandle.rawValue + 2, level.valueHandle.rawValue + 3])
        #expect(descriptors[0].properties["UUID"] == .string("00002901-0000-1000-8000-00805f9b34fb"))
        #expect(descriptors[0].properties["Flags"] == .strings(["read"]))
        let secretObject = try #require(app.objects.last)
        #expect(secretObject.handle == secret.valueHandle)
        #expect(secretObject.properties["Flags"] == .strings(["read", "write", "reliable-write", "encrypt-read", "encrypt-authenticated-write"]))
        let config0 = try #require(app.object(at: "/org/gattd/app/service" + hex(config.handle)))
        #expect(config0.properties["Primary"] == .boolean(false))
        #expect(config0.properties["UUID"] == .string("6e400001-b5a3-f393-e0a9-e50e24dcca9e"))
    }

    @Test func getManagedObjectsListsEveryObjectWithItsInterface() {
        var app = BlueZGattApplication(database: Self.database)
        guard case .reply(let values) = app.route(path: BlueZGattApplication.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects", arguments: []) else {
            Issue.record("no answer"); return
        }
        let objects = values.first?.dictionary ?? [:]
        #expect(objects.count == app.objects.count)
        for o in app.objects { #expect(objects[o.path]?.dictionary?[o.interface]?.dictionary == o.properties.mapValues { .variant($0) }) }
        // Only the root is an object manager.
        #expect(app.route(path: app.objects[0].path, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects", arguments: [])
            == .fail(.unknownMethod("\(app.objects[0].path) is no object manager")))
    }

    @Test func propertiesAndCallsAreRouted() throws {
        var app = BlueZGattApplication(database: Self.database)
        let c = app.objects[1], d = app.objects[2]
        #expect(app.route(path: c.path, interface: "org.freedesktop.DBus.Properties", member: "Get", arguments: [.string(c.interface), .string("UUID")])
            == .reply([.variant(.string("00002a19-0000-1000-8000-00805f9b34fb"))]))
        #expect(app.route(path: c.path, interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string(c.interface)])
            == .reply([.properties(c.properties)]))
        let options: DBusValue = .properties(["device": .objectPath("/org/bluez/hci0/dev_00_AA_01_01_00_01"), "offset": .uint16(22), "mtu": .uint16(185), "link": .string("LE")])
        #expect(app.route(path: c.path, interface: BlueZGattApplication.characteristicInterface, member: "ReadValue", arguments: [options])
            == .attribute(.read(c.handle, BlueZAccessOptions(device: "/org/bluez/hci0/dev_00_AA_01_01_00_01", offset: 22, mtu: 185, link: "LE"))))
        #expect(app.route(path: d.path, interface: BlueZGattApplication.descriptorInterface, member: "WriteValue", arguments: [.bytes([1, 2]), .properties(["type": .string("request")])])
            == .attribute(.write(d.handle, [1, 2], BlueZAccessOptions(type: "request"))))
        #expect(app.route(path: c.path, interface: BlueZGattApplication.characteristicInterface, member: "StartNotify", arguments: []) == .attribute(.startNotify(c.handle)))
        #expect(app.route(path: c.path, interface: BlueZGattApplication.characteristicInterface, member: "Confirm", arguments: []) == .attribute(.confirm(c.handle)))
        // Wrong interface, unknown path, a service's "ReadValue", bad arguments.
        #expect(app.route(path: c.path, interface: BlueZGattApplication.descriptorInterface, member: "ReadValue", arguments: [])
            == .fail(.unknownMethod("org.bluez.GattDescriptor1.ReadValue on \(c.path)")))
        #expect(app.route(path: "/org/gattd/app/nothing", interface: "org.freedesktop.DBus.Properties", member: "GetAll", arguments: [.string("x")])
            == .fail(.unknownObject("/org/gattd/app/nothing")))
        #expect(app.route(path: app.objects[0].path, interface: BlueZGattApplication.serviceInterface, member: "ReadValue", arguments: [])
            == .fail(.unknownMethod("org.bluez.GattService1.ReadValue on \(app.objects[0].path)")))
        #expect(app.route(path: c.path, interface: BlueZGattApplication.characteristicInterface, member: "WriteValue", arguments: [.string("no")])
            == .fail(.invalidArgs("WriteValue takes ay, a{sv}")))
    }

    @Test func aHandleBluetoothdMovedIsSaid() {
        var app = BlueZGattApplication(database: Self.database)
        let c = app.objects[1]
        let set = { (h: UInt16) in app.route(path: c.path, interface: "org.freedesktop.DBus.Properties", member: "Set", arguments: [.string(c.interface), .string("Handle"), .variant(.uint16(h))]) }
        // The handle asked for: nothing moved.
        #expect(set(c.handle.rawValue) == .reply([]))
        #expect(set(0x0042) == .moved(path: c.path, asked: c.handle, given: 0x0042))
        #expect(app.object(at: c.path)?.properties["Handle"] == .uint16(0x0042))
        #expect(app.route(path: c.path, interface: "org.freedesktop.DBus.Properties", member: "Set", arguments: [.string(c.interface), .string("UUID"), .variant(.string("x"))])
            == .fail(DBusError("org.freedesktop.DBus.Error.PropertyReadOnly", "only Handle can be set")))
    }

    @Test func aLayoutHigherUpWhereBluetoothdHoldsGattdsHandles() {
        let base = BlueZGattApplication(database: Self.database)
        let shifted = BlueZGattApplication(database: Self.database, handleOffset: 0x0100)
        #expect(BlueZGattApplication.handleOffsets == [0, 0x0100, 0x0200])
        #expect(shifted.objects.map(\.path) == base.objects.map(\.path))  // the same paths
        #expect(shifted.objects.map(\.handle) == base.objects.map(\.handle))  // gattd's handles inside
        for (b, s) in zip(base.objects, shifted.objects) {
            #expect(s.properties["Handle"]?.integer == (b.properties["Handle"]?.integer ?? 0) + 0x0100)
        }
        // bluetoothd's own placement: Handle 0, and where it puts each one is written back.
        var placed = base.lettingBluetoothdPlace()
        #expect(!placed.asksForHandles && base.asksForHandles)
        let c = placed.objects[1]
        let set = { (app: inout BlueZGattApplication, h: UInt16) in
            app.route(path: c.path, interface: "org.freedesktop.DBus.Properties", member: "Set", arguments: [.string(c.interface), .string("Handle"), .variant(.uint16(h))])
        }
        #expect(set(&placed, c.handle.rawValue) == .reply([]))  // put at gattd's own handle: no move
        var other = base.lettingBluetoothdPlace()
        #expect(set(&other, 0x0033) == .moved(path: c.path, asked: c.handle, given: 0x0033))
    }

    @Test func introspectionNamesTheChildren() {
        var app = BlueZGattApplication(database: Self.database)
        guard case .reply(let values) = app.route(path: "/org/gattd", interface: "org.freedesktop.DBus.Introspectable", member: "Introspect", arguments: []) else { Issue.record("no answer"); return }
        #expect(values == [.string("<node><node name=\"app\"/></node>")])
        guard case .reply(let root) = app.route(path: BlueZGattApplication.root, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect", arguments: []),
            let xml = root.first?.string
        else { Issue.record("no answer"); return }
        #expect(xml.contains("org.freedesktop.DBus.ObjectManager") && xml.contains("<node name=\"service"))
    }

    @Test func attErrorsBecomeTheNamesBluetoothdMapsBack() {
        #expect(BlueZGattError.dbusError(.writeNotPermitted).name == "org.bluez.Error.NotPermitted")
        #expect(BlueZGattError.dbusError(.insufficientAuthorization).name == "org.bluez.Error.NotAuthorized")
        #expect(BlueZGattError.dbusError(.invalidAttributeValueLength).name == "org.bluez.Error.InvalidValueLength")
        #expect(BlueZGattError.dbusError(.invalidOffset).name == "org.bluez.Error.InvalidOffset")
        #expect(BlueZGattError.dbusError(.requestNotSupported).name == "org.bluez.Error.NotSupported")
        #expect(BlueZGattError.dbusError(.procedureAlreadyInProgress).name == "org.bluez.Error.InProgress")
        // Never Failed: bluetoothd would read its text as an application error code.
        for e in ATTError.allCases { #expect(BlueZGattError.dbusError(e).name != "org.bluez.Error.Failed") }
        #expect(BlueZGattError.codeSent(for: .valueNotAllowed) == .unlikelyError)
        #expect(BlueZGattError.codeSent(for: .invalidOffset) == .invalidOffset)
    }

    private func hex(_ h: AttributeHandle) -> String {
        let s = String(h.rawValue, radix: 16)
        return String(repeating: "0", count: 4 - s.count) + s
    }
}
