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

    @Test func aBroadcasterAsksForNoFlags() throws {
        // gattd's own payload carries Flags 0x06; bluetoothd 5.66 refuses a broadcast
        // advertisement with any ("Broadcast cannot set flags"), so none are asked for.
        var a = AdvertisingConfiguration()
        a.connectable = false
        a.scannable = false
        a.manufacturerData = [AdvertisingConfiguration.ManufacturerData(companyID: 0xFFFF, data: [0xBE, 0xEF])]
        let s = try set(a)
        #expect(Array(s.payloads.advertisingData.prefix(3)) == [0x02, 0x01, 0x06])
        let props = BlueZAdvertisement.properties(s)
        #expect(props["Type"] == .string("broadcast"))
        #expect(props["Discoverable"] == nil && props["Data"] == nil)
        #expect(props["ManufacturerData"] == .array(element: "{qv}", [.dictEntry(.uint16(0xFFFF), .variant(.bytes([0xBE, 0xEF])))]))
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

    @Test func aNewBondIsReportedOnceWithWhatTheAgentSaw() throws {
        var d = BlueZDevices(adapter: 0)
        let path = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
        _ = d.changed(path, ["Address": .string("00:AA:01:01:00:01"), "AddressType": .string("public"), "Bonded": .boolean(false), "Paired": .boolean(false)])
        guard case .connected(let id, _)? = d.changed(path, ["Connected": .boolean(true)]).first else { Issue.record("not connected"); return }
        d.asked(path, .numericComparison(123_456))
        // Paired first, then Bonded (bluetoothd 5.66's order): the bond comes with Bonded.
        #expect(d.changed(path, ["Paired": .variant(.boolean(true))]).isEmpty)
        let events = d.changed(path, ["Bonded": .variant(.boolean(true))])
        guard case .pairing(id, .pairingComplete(let bond, true))? = events.first, events.count == 1 else { Issue.record("\(events)"); return }
        #expect(bond.address.description == "00:AA:01:01:00:01" && bond.addressType == .public)
        #expect(bond.authenticated && bond.secureConnections && bond.longTermKey == nil)
        // A bonded central that reconnects is no new bond; nor is one already bonded at load.
        _ = d.changed(path, ["Connected": .boolean(false)])
        #expect(d.changed(path, ["Connected": .boolean(true)]).count == 1)
        var loaded = BlueZDevices(adapter: 0)
        let objects: DBusValue = .array(element: "{oa{sa{sv}}}", [
            .dictEntry(.objectPath(path), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Device1"), .properties(["Bonded": .boolean(true), "Paired": .boolean(true), "Connected": .boolean(true)])),
            ]))
        ])
        #expect(loaded.load(objects).count == 1)
        // Just Works (no question): unauthenticated. A bluetoothd without Bonded says Paired.
        var old = BlueZDevices(adapter: 0)
        _ = old.changed(path, ["Connected": .boolean(true)])
        let justWorks = old.changed(path, ["Paired": .boolean(true)])
        guard case .pairing(_, .pairingComplete(let b, true))? = justWorks.first else { Issue.record("\(justWorks)"); return }
        #expect(!b.authenticated && !b.secureConnections)
        #expect(old.path(of: BluetoothAddress("00:AA:01:01:00:02")!) == "/org/bluez/hci0/dev_00_AA_01_01_00_02")
        // A central bluetoothd did not know: its object is added already connected, then it bonds.
        var fresh = BlueZDevices(adapter: 0)
        let added = fresh.added(path, ["Address": .variant(.string("00:AA:01:01:00:01")), "Connected": .variant(.boolean(true)), "Paired": .variant(.boolean(false)), "Bonded": .variant(.boolean(false))])
        guard case .connected(let newID, _)? = added.first, added.count == 1 else { Issue.record("\(added)"); return }
        #expect(fresh.changed(path, ["Paired": .boolean(true)]).isEmpty)
        guard case .pairing(newID, .pairingComplete(_, true))? = fresh.changed(path, ["Bonded": .boolean(true)]).first else { Issue.record("no bond"); return }
        #expect(fresh.added("/org/bluez/hci1/dev_00_AA_01_01_00_01", ["Connected": .boolean(true)]).isEmpty)
    }
}
