import Testing
@testable import GattCore
import GattTestFixtures

private func extended(
    name: String? = nil, connectable: Bool = false, scannable: Bool = false, manufacturer: [Int] = [],
    pdus: AdvertisingPDUs = .extended1M
) -> AdvertisingConfiguration {
    var c = AdvertisingConfiguration()
    c.localName = name
    c.connectable = connectable
    c.scannable = scannable
    c.pdus = pdus
    c.manufacturerData = manufacturer.enumerated().map { .init(companyID: UInt16($0.offset), data: [UInt8](repeating: 0xEE, count: $0.element)) }
    return c
}

private func build(_ c: AdvertisingConfiguration, path: String = "advertising_sets[0]") throws(AdvertisingPayloadError) -> AdvertisingPayloads {
    try AdvertisingPayloadBuilder.build(c, deviceName: "", path: path)
}

/// `AdvertisingPayloadBuilder` with extended PDUs (Vol 6 Part B §2.3.4, Vol 4 Part E
/// §7.8.53–§7.8.56) and the legacy properties of the same payloads.
@Suite struct ExtendedAdvertisingPayloadTests {
    /// Advertising_Event_Properties, Vol 4 Part E §7.8.53 (legacy: Table "Advertising_Event_Properties
    /// values for legacy PDUs": ADV_IND 0x13, ADV_SCAN_IND 0x12, ADV_NONCONN_IND 0x10).
    @Test func advertisingEventProperties() throws {
        var legacy = AdvertisingConfiguration()
        legacy.localName = "L"
        #expect(try build(legacy).advertisingEventProperties.rawValue == 0x0013)
        legacy.connectable = false
        #expect(try build(legacy).advertisingEventProperties.rawValue == 0x0012)
        legacy.scannable = false
        #expect(try build(legacy).advertisingEventProperties.rawValue == 0x0010)

        let connectable = try build(extended(name: "E", connectable: true))
        #expect(connectable.advertisingEventProperties.rawValue == 0x0001 && connectable.isConnectable && !connectable.isScannable)
        let scannable = try build(extended(name: "E", scannable: true))
        #expect(scannable.advertisingEventProperties.rawValue == 0x0002 && !scannable.isConnectable && scannable.isScannable)
        #expect(try build(extended(name: "E")).advertisingEventProperties.rawValue == 0x0000)
    }

    @Test func capacities() throws {
        let legacy = try build(AdvertisingConfiguration())
        #expect(legacy.advertisingDataCapacity == 31 && legacy.scanResponseCapacity == 31)
        let connectable = try build(extended(connectable: true))
        #expect(connectable.advertisingDataCapacity == 245 && connectable.scanResponseCapacity == 0)
        let scannable = try build(extended(name: "S", scannable: true))
        #expect(scannable.advertisingDataCapacity == 0 && scannable.scanResponseCapacity == 1650)
        let neither = try build(extended())
        #expect(neither.advertisingDataCapacity == 1650 && neither.scanResponseCapacity == 0)
    }

    @Test func nonConnectableExtendedTakesUpTo1650Bytes() throws {
        // 3 (flags) + 6 × 256 + 111 = 1650.
        let full = try build(extended(manufacturer: [252, 252, 252, 252, 252, 252, 107]))
        #expect(full.advertisingData.count == 1650 && full.scanResponseData == [])
        #expect(AdvertisingDataStructure.parse(full.advertisingData)?.count == 8)
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising_sets[0].manufacturer_data[6]", needed: 112, advertisingDataLeft: 111, scanResponseLeft: nil)) {
            try build(extended(manufacturer: [252, 252, 252, 252, 252, 252, 108]))
        }
    }

    @Test func oneADStructureHoldsAtMost255BytesAfterItsLength() throws {
        #expect(try build(extended(manufacturer: [252])).advertisingData.count == 3 + 256)
        #expect(throws: AdvertisingPayloadError.invalidValue(
            field: "advertising_sets[0].manufacturer_data[0]", reason: "is 256 bytes of AD type and data; one AD structure holds at most 255 (its length is one byte)")) {
            try build(extended(manufacturer: [253]))
        }
        // A name longer than one structure: shortened to 254 bytes, never a wrong length byte.
        let name = String(repeating: "n", count: 300)
        let p = try build(extended(name: name))
        #expect(p.advertisingData == h("02 01 06 FF 08") + [UInt8](repeating: 0x6E, count: 254))
        #expect(p.facts.name == .shortened(String(repeating: "n", count: 254), of: name, inScanResponse: false, completeInScanResponse: false))
        // The longest config name (248 bytes) is complete.
        #expect(try build(extended(name: String(repeating: "m", count: 248))).advertisingData.count == 3 + 250)
    }

    @Test func serviceUUIDListsHoldOneStructureEach() throws {
        var c = extended()
        c.serviceUUIDs = (0..<15).map { BluetoothUUID(bigEndianBytes: [UInt8](repeating: UInt8($0), count: 15) + [0xA5])! }
        #expect(try build(c).advertisingData.count == 3 + 2 + 15 * 16)
        c.serviceUUIDs.append(BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!)
        #expect(throws: AdvertisingPayloadError.invalidValue(
            field: "advertising_sets[0].service_uuids[15]",
            reason: "is 128-bit service UUID 16 of 16; one payload's list holds at most 15 (one AD structure per size, its length is one byte)")) {
            try build(c)
        }
    }

    @Test func scannableExtendedPutsEverythingInTheScanResponseWithoutFlags() throws {
        var c = extended(name: "Scan", scannable: true, manufacturer: [40])
        c.serviceUUIDs = [0x180F]
        let p = try build(c)
        #expect(p.advertisingData == [])
        #expect(p.scanResponseData == h("05 09 53 63 61 6E  03 03 0F 18  2B FF 00 00") + [UInt8](repeating: 0xEE, count: 40))
        #expect(p.facts.warnings == [])  // nothing "moved": the scan response is where a scannable set's data lives
        #expect(p.parameters.advertisingType == .scannableUndirected)

        // Too much: the error counts the scan response, which is where the bytes go.
        #expect(throws: AdvertisingPayloadError.doesNotFit(field: "advertising_sets[0].manufacturer_data[6]", needed: 256, advertisingDataLeft: 0, scanResponseLeft: 114)) {
            try build(extended(scannable: true, manufacturer: [252, 252, 252, 252, 252, 252, 252]))
        }
        #expect(throws: AdvertisingPayloadError.invalidValue(
            field: "advertising_sets[0].scannable",
            reason: #"a scannable extended set sends all its data in the scan response, and this one has none; add "local_name" or other data, or leave "scannable" out"#)) {
            try build(extended(scannable: true))
        }
    }

    @Test func connectableAndScannableExtendedIsRefusedUnlessAnIBeaconAlone() throws {
        #expect(throws: AdvertisingPayloadError.invalidValue(field: "advertising_sets[0].scannable", reason: AdvertisingPayloadBuilder.connectableAndScannable)) {
            try build(extended(name: "x", connectable: true, scannable: true))
        }
        // An iBeacon alone ignores connectable and scannable, with either PDUs.
        var beacon = extended(connectable: true, scannable: true)
        beacon.iBeacon = .init(uuid: BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0")!, major: 1, minor: 2, measuredPower: -59)
        let p = try build(beacon)
        #expect(p.isBeaconOnly && p.advertisingEventProperties.rawValue == 0x0000 && p.advertisingData.count == 30)
    }

    @Test func legacySetsAreBuiltAsBeforeUnderTheirPath() throws {
        var c = AdvertisingConfiguration()
        c.serviceUUIDs = (0x1801...0x180E).map { BluetoothUUID(uuid16: UInt16($0)) }
        c.manufacturerData = [.init(companyID: 89, data: [1, 2, 3, 4])]
        let asPrimary = try AdvertisingPayloadBuilder.build(c, deviceName: "")
        let asSet = try build(c)
        #expect(asSet.advertisingData == asPrimary.advertisingData && asSet.scanResponseData == asPrimary.scanResponseData)
        #expect(asSet.pdus == .legacy && asSet.parameters == asPrimary.parameters)
        #expect(asSet.facts.warnings.map(\.description) == [
            "advertising_sets[0].service_uuids: the 16-bit service UUID list in the advertising data is incomplete (13 of 14); the rest are in the scan response",
            "advertising_sets[0].manufacturer_data[0]: moved to the scan response (no room in the advertising data)",
        ])
        var badInterval = c
        badInterval.intervalMs = .init(min: 10, max: 20)
        #expect(throws: AdvertisingPayloadError.invalidValue(field: "advertising_sets[0].interval_ms", reason: "must be within 20 ms ... 10240 ms")) {
            try build(badInterval)
        }
    }

    @Test func phyNamesAndRawValues() {
        // Vol 4 Part E §7.8.53: 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
        #expect(LEPHY.allCases.map(\.rawValue) == [0x01, 0x02, 0x03])
        #expect(LEPHY.allCases.map(\.configName) == ["1m", "2m", "coded"])
        #expect(LEPHY(configName: "coded") == .leCoded && LEPHY(configName: "Coded") == nil)
        #expect(AdvertisingPDUs.extended(primaryPHY: .leCoded, secondaryPHY: .le2M).description
            == "extended PDUs (primary PHY LE Coded, secondary PHY LE 2M)")
    }
}
