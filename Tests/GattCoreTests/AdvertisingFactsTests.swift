import Testing

@testable import GattCore

/// `AdvertisingPayloads.facts`: what the builder did, for `--check-config` warnings and the
/// daemon's "advertising as …" line.
@Suite struct AdvertisingFactsTests {
    private func config(name: String?, services: [BluetoothUUID] = []) -> AdvertisingConfiguration {
        var c = AdvertisingConfiguration()
        c.localName = name
        c.serviceUUIDs = services
        return c
    }

    private let beaconUUID = BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!

    @Test func everythingInTheAdvertisingDataHasNoWarning() throws {
        let p = try AdvertisingPayloadBuilder.build(config(name: nil, services: [0x180D]), deviceName: "HR-Demo")
        #expect(p.facts.name == .complete("HR-Demo", inScanResponse: false))
        #expect(p.facts.nameField == "name")
        #expect(p.facts.uuidLists == [.init(bits: 16, count: 1, inAdvertising: 1, inScanResponse: 0)])
        #expect(p.facts.warnings == [])
        #expect(p.facts.logDescription(beaconOnly: false) == "advertising as \"HR-Demo\" (complete local name; 16-bit service UUIDs complete)")
    }

    @Test func aLongNameIsShortenedAndTheWarningNamesTheField() throws {
        let name = "Greenhouse-North-Sensor-Unit-01"
        let p = try AdvertisingPayloadBuilder.build(config(name: name, services: [0x181A]), deviceName: "x")
        // The complete name (33 bytes) fits in neither packet; the longest shortened name
        // that leaves room for the rest fills the advertising data, the UUID list goes to
        // the scan response.
        #expect(p.facts.name == .shortened("Greenhouse-North-Sensor-Un", of: name, inScanResponse: false, completeInScanResponse: false))
        #expect(p.advertisingData.count == 31)
        #expect(p.facts.uuidLists == [.init(bits: 16, count: 1, inAdvertising: 0, inScanResponse: 1)])
        #expect(p.facts.warnings == [
            .init(field: "advertising.local_name",
                  message: "the local name \"\(name)\" (31 bytes) is advertised shortened as \"Greenhouse-North-Sensor-Un\" in the advertising data; the complete name is not advertised"),
            .init(field: "advertising.service_uuids", message: "the 16-bit service UUIDs are only in the scan response (no room in the advertising data)"),
        ])
        #expect(p.facts.logDescription(beaconOnly: false)
            == "advertising as \"Greenhouse-North-Sensor-Un\" (shortened local name of \"\(name)\", complete name not advertised; 16-bit service UUIDs in the scan response only)")
    }

    @Test func aSplitUUIDListIsIncomplete() throws {
        let uuids = (0..<15).map { BluetoothUUID(uuid16: 0x1800 + UInt16($0)) }
        let p = try AdvertisingPayloadBuilder.build(config(name: "HR", services: uuids), deviceName: "x")
        #expect(p.facts.uuidLists == [.init(bits: 16, count: 15, inAdvertising: 11, inScanResponse: 4)])
        #expect(p.facts.warnings.map(\.field) == ["advertising.service_uuids"])
        #expect(p.facts.warnings[0].message.contains("incomplete (11 of 15)"))
        #expect(p.facts.logDescription(beaconOnly: false).hasSuffix("16-bit service UUIDs incomplete (11 of 15 in the advertising data))"))
    }

    @Test func fieldsMovedToTheScanResponseAreNamed() throws {
        var c = config(name: "B", services: [0x180D])
        c.iBeacon = .init(uuid: beaconUUID, major: 1, minor: 2, measuredPower: -59)
        c.manufacturerData = [.init(companyID: 0x0059, data: [1])]
        let p = try AdvertisingPayloadBuilder.build(c, deviceName: "x")
        #expect(p.facts.name == .complete("B", inScanResponse: true))
        #expect(p.facts.movedToScanResponse == ["advertising.manufacturer_data[0]"])
        #expect(p.facts.warnings.map(\.field) == ["advertising.local_name", "advertising.service_uuids", "advertising.manufacturer_data[0]"])
        #expect(p.facts.logDescription(beaconOnly: false).hasPrefix("advertising as \"B\" (complete local name, in the scan response only;"))
    }

    @Test func anIBeaconAloneHasNoName() throws {
        var c = config(name: "Beacon")
        c.iBeacon = .init(uuid: beaconUUID, major: 1, minor: 2, measuredPower: -59)
        let p = try AdvertisingPayloadBuilder.build(c, deviceName: "x")
        #expect(p.facts.name == .none)
        #expect(p.facts.warnings == [])
        #expect(p.facts.logDescription(beaconOnly: p.isBeaconOnly) == "advertising an iBeacon (non-connectable, no local name)")
    }

    @Test func payloadsAreDecoded() throws {
        var c = config(name: "HR", services: [0x180D])
        c.txPower = -4
        c.appearance = 0x0341
        c.manufacturerData = [.init(companyID: 0x0059, data: [1, 2])]
        let p = try AdvertisingPayloadBuilder.build(c, deviceName: "x")
        #expect(AdvertisingDataStructure.describe(payload: p.advertisingData, title: "advertising data") == [
            "advertising data: 24 of 31 bytes: 0201060309485203030d1805ff59000102020afc03194103",
            "  020106           Flags 0x06 (LE General Discoverable, BR/EDR Not Supported)",
            "  03094852         Complete Local Name \"HR\"",
            "  03030d18         Complete List of 16-bit Service UUIDs 180D",
            "  05ff59000102     Manufacturer Specific Data company 0x0059 0102",
            "  020afc           TX Power Level -4 dBm",
            "  03194103         Appearance 0x0341",
        ])
        var b = config(name: nil)
        b.iBeacon = .init(uuid: beaconUUID, major: 1, minor: 2, measuredPower: -59)
        let beacon = try AdvertisingPayloadBuilder.build(b, deviceName: "x")
        #expect(AdvertisingDataStructure.describe(payload: beacon.advertisingData, title: "a").last?.hasSuffix(
            "Manufacturer Specific Data iBeacon e2c56db5-dffb-48d2-b060-d0f5a71096e0 major 1 minor 2 measured power -59 dBm") == true)
        #expect(AdvertisingDataStructure.describe(payload: [], title: "scan response") == ["scan response: 0 of 31 bytes"])
    }
}
