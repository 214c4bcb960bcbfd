import GattBlueZ
import GattCore
import GattDBus
import Testing

/// The BlueZ transport's sans-I/O parts: advertising sets as `LEAdvertisement1` properties
/// (read back from the payloads gattd built), and bluetoothd's devices as connections.
@Suite struct BlueZTransportRulesTests {
    private func set(_ advertising: AdvertisingConfiguration) throws -> AdvertisingSet {
        try AdvertisingSetConfiguration(id: "primary", path: "advertising", advertising: advertising).build()
    }

    @Test func anAdvertisingSetBecomesNamedProperties() throws {
        var a = AdvertisingConfiguration()
        a.localName = "gattd-bz"
        a.serviceUUIDs = [0xFFB0, BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!]
        a.manufacturerData = [AdvertisingConfiguration.ManufacturerData(companyID: 0x0059, data: [1, 2])]
        let props = BlueZAdvertisement.properties(try set(a))
        #expect(props["Type"] == .string("peripheral"))
        #expect(props["LocalName"] == .string("gattd-bz"))
        #expect(props["Discoverable"] == .boolean(true))
        #expect(props["ServiceUUIDs"]?.items?.compactMap(\.string).contains("0000ffb0-0000-1000-8000-00805f9b34fb") == true)
        #expect(props["ManufacturerData"] == .array(element: "{qv}", [.dictEntry(.uint16(0x0059), .variant(.bytes([1, 2])))]))
        #expect(props["Data"] == nil)
    }

    @Test func adStructuresBluetoothdHasNoPropertyForGoThroughData() {
        // Flags, a 16-bit service data, appearance, TX power, and an AD type 0x2C.
        let ad: [UInt8] = [2, 0x01, 0x06, 5, 0x16, 0x0F, 0x18, 0x64, 0x00, 3, 0x19, 0x40, 0x03, 2, 0x0A, 0x00, 3, 0x2C, 0xAA, 0xBB]
        let s = AdvertisingSet(id: "x", path: "advertising_sets[0]", payloads: AdvertisingPayloads(
            advertisingData: ad, scanResponseData: [], parameters: AdvertisingParameters(intervalMin: 160, intervalMax: 240, advertisingType: .connectableUndirected),
            isBeaconOnly: false))
        let props = BlueZAdvertisement.properties(s)
        #expect(props["ServiceData"] == .array(element: "{sv}", [.dictEntry(.string("0000180f-0000-1000-8000-00805f9b34fb"), .variant(.bytes([0x64, 0x00])))]))
        #expect(props["Appearance"] == .uint16(0x0340))
        #expect(props["Includes"] == .strings(["tx-power"]))
        #expect(props["Data"] == .array(element: "{yv}", [.dictEntry(.byte(0x2C), .variant(.bytes([0xAA, 0xBB])))]))
    }

    @Test func devicesComeAndGoAsConnections() {
        var d = BlueZDevices(adapter: 0)
        let path = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
        // Known but not connected: nothing yet.
        #expect(d.changed(path, ["Address": .string("00:AA:01:01:00:01"), "AddressType": .string("public"), "Connected": .boolean(false)]).isEmpty)
        let up = d.changed(path, ["Connected": .variant(.boolean(true))])
        guard case .connected(let id, let peer)? = up.first, up.count == 1 else { Issue.record("\(up)"); return }
        #expect(peer.address.description == "00:AA:01:01:00:01" && peer.addressType == .public)
        #expect(d.path(of: id) == path)
        #expect(d.changed(path, ["Connected": .boolean(true)]).isEmpty)  // said twice
        #expect(d.connection(for: path)?.0 == id)
        #expect(d.changed(path, ["Connected": .boolean(false)]) == [.disconnected(id, reason: .remoteUserTerminatedConnection)])
        // Another adapter's devices, and paths below a device, are not ours.
        #expect(d.changed("/org/bluez/hci1/dev_00_AA_01_00_00_00", ["Connected": .boolean(true)]).isEmpty)
        #expect(d.connection(for: path + "/service0010") == nil)
    }

    @Test func aRequestBeforeConnectedBringsTheDeviceUp() throws {
        var d = BlueZDevices(adapter: 0)
        let path = "/org/bluez/hci0/dev_6A_11_22_33_44_55"
        let found = d.connection(for: path)
        let (id, events) = try #require(found)
        #expect(events == [.connected(id, TransportPeer(address: BluetoothAddress("6A:11:22:33:44:55")!, addressType: .public))])
        #expect(d.changed(path, ["Connected": .boolean(true)]).isEmpty)
        #expect(d.removed(path) == [.disconnected(id, reason: .remoteUserTerminatedConnection)])
        #expect(d.connection(for: nil) == nil)
    }

    @Test func objectsAlreadyThereAreLoaded() {
        var d = BlueZDevices(adapter: 0)
        let objects: DBusValue = .array(element: "{oa{sa{sv}}}", [
            .dictEntry(.objectPath("/org/bluez/hci0/dev_00_AA_01_01_00_01"), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Device1"), .properties(["Address": .string("00:AA:01:01:00:01"), "AddressType": .string("random"), "Connected": .boolean(true)])),
            ])),
            .dictEntry(.objectPath("/org/bluez/hci0/dev_00_AA_01_01_00_02"), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Device1"), .properties(["Connected": .boolean(false)])),
            ])),
        ])
        let events = d.load(objects)
        #expect(events.count == 1)
        guard case .connected(_, let peer)? = events.first else { Issue.record("\(events)"); return }
        #expect(peer.addressType == .random)
        #expect(d.connectedCount == 1)
    }
}
