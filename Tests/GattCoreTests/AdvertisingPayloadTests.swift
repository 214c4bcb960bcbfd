import Testing
@testable import GattCore
import GattTestFixtures

private func utf8(_ s: String) -> [UInt8] { Array(s.utf8) }

private func config(
    name: String? = "HR-Demo", services: [BluetoothUUID] = [], manufacturer: [AdvertisingConfiguration.ManufacturerData] = [],
    serviceData: [AdvertisingConfiguration.ServiceData] = [], connectable: Bool = true, scannable: Bool = true
) -> AdvertisingConfiguration {
    var c = AdvertisingConfiguration()
    c.localName = name
    c.serviceUUIDs = services
    c.manufacturerData = manufacturer
    c.serviceData = serviceData
    c.connectable = connectable
    c.scannable = scannable
    return c
}

/// Builds and checks the invariants every payload must satisfy.
private func build(_ c: AdvertisingConfiguration, deviceName: String = "gattd") throws -> AdvertisingPayloads {
    let p = try AdvertisingPayloadBuilder.build(c, deviceName: deviceName)
    #expect(p.advertisingData.count <= 31)
    #expect(p.scanResponseData.count <= 31)
    #expect(AdvertisingDataStructure.parse(p.advertisingData) != nil)
    #expect(AdvertisingDataStructure.parse(p.scanResponseData) != nil)
    return p
}

private let nus = BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
private let nusLE = h("9E CA DC 24 0E E5 A9 E0 93 F3 A3 B5 01 00 40 6E")

@Suite struct AdvertisingPayloadTests {
    @Test func deviceNameIsTheFallback() throws {
        #expect(try build(config(name: nil), deviceName: "gattd").advertisingData == h("02 01 06 06 09") + utf8("gattd"))
        #expect(try build(config(name: nil), deviceName: "").advertisingData == h("02 01 06"))
    }

    @Test func longNameIsShortenedWithTheCompleteNameInTheScanResponse() throws {
        let name = "Kitchen Thermometer Pro 3000"  // 28 bytes: 30 with its header, 28 left after the flags
        let alone = try build(config(name: name))
        #expect(alone.advertisingData == h("02 01 06 1B 08") + utf8("Kitchen Thermometer Pro 30"))
        #expect(alone.scanResponseData == h("1D 09") + utf8(name))

        // The shortened name leaves room for the service UUID list.
        let withService = try build(config(name: name, services: [0x180D]))
        #expect(withService.advertisingData == h("02 01 06 17 08") + utf8("Kitchen Thermometer Pr") + h("03 03 0D 18"))
        #expect(withService.scanResponseData == h("1D 09") + utf8(name))
    }

    @Test func shortenedNameNeverSplitsAUTF8Character() throws {
        let name = "Temperature Sensor Lounge" + "é" + "x"  // 25 + 2 + 1 bytes; 26 fit
        let p = try build(config(name: name))
        #expect(p.advertisingData == h("02 01 06 1A 08") + utf8("Temperature Sensor Lounge"))
        #expect(p.scanResponseData == h("1D 09") + utf8(name))
        let emoji = try build(config(name: String(repeating: "🌡", count: 8)))  // 32 bytes
        let shortened = AdvertisingDataStructure.parse(emoji.advertisingData)?.last
        #expect(shortened?.type == .shortenedLocalName)
        #expect(shortened?.data == utf8(String(repeating: "🌡", count: 6)))
        // 32 bytes do not fit in the scan response either.
        #expect(emoji.scanResponseData == [])
    }

    @Test func nameTooLongForAnyPacketWithoutScanResponse() throws {
        let name = "Kitchen Thermometer Pro 3000"
        let p = try build(config(name: name, scannable: false))
        #expect(p.advertisingData == h("02 01 06 1B 08") + utf8("Kitchen Thermometer Pro 30"))
        #expect(p.scanResponseData == [])
        #expect(p.parameters.advertisingType == .connectableUndirected)
    }

    @Test func uuid128MovesToTheScanResponse() throws {
        let p = try build(config(services: [0x180D, nus]))
        #expect(p.advertisingData == h("02 01 06  08 09 48 52 2D 44 65 6D 6F  03 03 0D 18"))
        #expect(p.scanResponseData == h("11 07") + nusLE)
    }

    @Test func splitListsAreIncomplete() throws {
        let uuids = (0x1800...0x180F).map { BluetoothUUID(uuid16: UInt16($0)) }
        let p = try build(config(name: "HR", services: uuids))
        #expect(p.advertisingData == h("02 01 06  03 09 48 52  17 02  00 18 01 18 02 18 03 18 04 18 05 18 06 18 07 18 08 18 09 18 0A 18"))
        #expect(p.scanResponseData == h("0B 02  0B 18 0C 18 0D 18 0E 18 0F 18"))
    }

    @Test func thirtyTwoBitUUIDAndServiceData128() throws {
        var c = config(services: [BluetoothUUID(uuid32: 0x1234_5678)], serviceData: [.init(uuid: nus, data: [0x01])])
        c.iBeacon = nil
        let p = try build(c)
        #expect(p.advertisingData == h("02 01 06  08 09 48 52 2D 44 65 6D 6F  05 05 78 56 34 12"))
        #expect(p.scanResponseData == h("12 21") + nusLE + [0x01])
    }

    @Test func manufacturerServiceDataTxPowerAppearance() throws {
        var c = config(manufacturer: [.init(companyID: 0x0059, data: [1, 2, 3])], serviceData: [.init(uuid: 0x180F, data: [0x64])])
        c.txPower = -4
        c.appearance = 0x0341
        let p = try build(c)
        #expect(p.advertisingData == h("02 01 06  08 09 48 52 2D 44 65 6D 6F  06 FF 59 00 01 02 03  04 16 0F 18 64  02 0A FC  03 19 41 03"))
        #expect(p.advertisingData.count == 31)
        #expect(p.scanResponseData == [])
        // One more byte of manufacturer data pushes the lowest priority item out.
        c.manufacturerData[0].data.append(4)
        let q = try build(c)
        #expect(q.advertisingData == h("02 01 06  08 09 48 52 2D 44 65 6D 6F  07 FF 59 00 01 02 03 04  04 16 0F 18 64  02 0A FC"))
        #expect(q.scanResponseData == h("03 19 41 03"))
    }

    @Test func iBeaconAloneFollowsApplesLayout() throws {
        var c = config(name: "Beacon")
        c.iBeacon = .init(uuid: BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!, major: 1, minor: 2, measuredPower: -59)
        let p = try build(c)
        #expect(
            p.advertisingData
                == h("02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 01 00 02 C5"))
        #expect(p.scanResponseData == [])
        #expect(p.isBeaconOnly)
        #expect(p.parameters.advertisingType == .nonConnectableUndirected)
        #expect(AdvertisingPayloadBuilder.isBeaconOnly(c))
    }

    @Test func iBeaconWithAServiceStaysConnectable() throws {
        var c = config(name: "B", services: [0x180D])
        c.iBeacon = .init(uuid: BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!, major: 0x1234, minor: 0xABCD, measuredPower: -59)
        let p = try build(c)
        #expect(p.advertisingData == h("02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 12 34 AB CD C5"))
        #expect(p.scanResponseData == h("02 09 42  03 03 0D 18"))
        #expect(!p.isBeaconOnly)
        #expect(p.parameters.advertisingType == .connectableUndirected)
    }

    @Test func advertisingTypes() throws {
        #expect(try build(config(connectable: false, scannable: true)).parameters.advertisingType == .scannableUndirected)
        #expect(try build(config(connectable: false, scannable: false)).parameters.advertisingType == .nonConnectableUndirected)
        var c = config()
        c.ownAddressType = .random
        c.intervalMs = .init(min: 20, max: 10240)
        let p = try build(c)
        #expect(p.parameters.ownAddressType == .random)
        #expect(p.parameters.intervalMin == 0x0020)
        #expect(p.parameters.intervalMax == 0x4000)
        #expect(p.parameters.channelMap == 0x07)
    }

    @Test func overflowErrorNamesTheFieldAndTheByteCounts() {
        let c = config(
            services: [0x180D],
            manufacturer: [
                .init(companyID: 0xFFFF, data: [UInt8](repeating: 1, count: 11)),
                .init(companyID: 0xFFFF, data: [UInt8](repeating: 2, count: 23)),
                .init(companyID: 0xFFFF, data: [UInt8](repeating: 3, count: 24)),
            ])
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising.manufacturer_data[2]", needed: 28, advertisingDataLeft: 9, scanResponseLeft: 4)) {
            try AdvertisingPayloadBuilder.build(c, deviceName: "x")
        }
        let e = AdvertisingPayloadError.doesNotFit(field: "advertising.manufacturer_data[2]", needed: 28, advertisingDataLeft: 9, scanResponseLeft: 4)
        #expect(e.description == "advertising.manufacturer_data[2]: needs 28 bytes, 9 left in the advertising data and 4 in the scan response")
        #expect(e.field == "advertising.manufacturer_data[2]")

        var notScannable = c
        notScannable.scannable = false
        do {
            _ = try AdvertisingPayloadBuilder.build(notScannable, deviceName: "x")
            Issue.record("expected an error")
        } catch {
            #expect(
                error.description
                    == "advertising.manufacturer_data[1]: needs 27 bytes, 9 left in the advertising data (no scan response: the advertisement is not scannable)")
        }
    }

    @Test func otherOverflows() {
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising.service_uuids[2]", needed: 18, advertisingDataLeft: 10, scanResponseLeft: 13)) {
            let more = ["6e400002-b5a3-f393-e0a9-e50e24dcca9e", "6e400003-b5a3-f393-e0a9-e50e24dcca9e"].map { BluetoothUUID($0)! }
            return try AdvertisingPayloadBuilder.build(config(services: [nus] + more), deviceName: "x")
        }
        // A single structure over 31 bytes fits nowhere.
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising.manufacturer_data[0]", needed: 32, advertisingDataLeft: 28, scanResponseLeft: 31)) {
            try AdvertisingPayloadBuilder.build(config(manufacturer: [.init(companyID: 1, data: [UInt8](repeating: 0, count: 28))]), deviceName: "x")
        }
        // Everything else fills both packets: not one character of the name fits.
        let full = config(manufacturer: [
            .init(companyID: 1, data: [UInt8](repeating: 0, count: 24)), .init(companyID: 2, data: [UInt8](repeating: 0, count: 27)),
        ])
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising.local_name", needed: 3, advertisingDataLeft: 0, scanResponseLeft: 0)) {
            try AdvertisingPayloadBuilder.build(full, deviceName: "x")
        }
        var badInterval = config()
        badInterval.intervalMs = .init(min: 10, max: 20)
        #expect(throws: AdvertisingPayloadError.invalidValue(field: "advertising.interval_ms", reason: "must be within 20 ms ... 10240 ms")) {
            try AdvertisingPayloadBuilder.build(badInterval, deviceName: "x")
        }
        badInterval.intervalMs = .init(min: 200, max: 100)
        #expect(throws: AdvertisingPayloadError.invalidValue(field: "advertising.interval_ms", reason: "minimum is greater than maximum")) {
            try AdvertisingPayloadBuilder.build(badInterval, deviceName: "x")
        }
    }

    @Test func parsesADStructures() {
        #expect(AdvertisingDataStructure.parse(h("02 01 06 03 03 0D 18 00 00")) == [
            AdvertisingDataStructure(type: .flags, data: [6]), AdvertisingDataStructure(type: .completeList16BitServiceUUIDs, data: [0x0D, 0x18]),
        ])
        #expect(AdvertisingDataStructure.parse(h("02 01 06 05 03 0D 18")) == nil)
        #expect(AdvertisingDataStructure.parse([]) == [])
    }
}
