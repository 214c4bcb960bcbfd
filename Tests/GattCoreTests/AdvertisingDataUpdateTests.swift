import Testing

@testable import GattCore
import GattTestFixtures

/// Run-time advertising data (the control op `advertising_data`): built by the config's rules
/// (errors name the field and the bytes, the set is left as it was), handed to the transport
/// only when something changed, kept across a reload unless the new config changes that field.
@Suite struct AdvertisingDataUpdateTests {
    static let config = """
        {"name": "Sets", "advertising": {"local_name": "Sets", "manufacturer_data": [{"company_id": 65535, "data": {"hex": "00"}}]},
         "advertising_sets": [{"id": "beacon", "connectable": false, "scannable": false,
           "service_data": [{"uuid": "FEAA", "data": {"hex": "10f6"}}]}]}
        """
    static func load(_ json: String = config) throws -> GattConfiguration { try ConfigFixture.load(json) }
    static func counter(_ bytes: [UInt8]) -> AdvertisingDataUpdate {
        AdvertisingDataUpdate(manufacturerData: [.init(companyID: 0xFFFF, data: bytes)])
    }

    /// The primary's manufacturer data replaced: the payload is the config's with the new bytes
    /// (AD type 0xFF, company 0xFFFF little-endian, then the data; Supplement Part A §1.4).
    @Test func thePrimarysDataIsReplaced() throws {
        var overrides = AdvertisingDataOverrides()
        let set = try overrides.update(set: "primary", with: Self.counter([0x2A, 0x00]), in: try Self.load())
        #expect(set.id == "primary" && set.path == "advertising")
        #expect(set.payloads.advertisingData.containsRun([0x05, 0xFF, 0xFF, 0xFF, 0x2A, 0x00]))
        #expect(!set.payloads.advertisingData.containsRun([0x04, 0xFF, 0xFF, 0xFF, 0x00]))
        var expected = try Self.load()
        expected.advertising.manufacturerData = [.init(companyID: 0xFFFF, data: [0x2A, 0x00])]
        #expect(set.payloads == (try expected.advertisingPayloads()), "the same builder as the config")
    }

    /// A field not in the update stays; an empty array removes the field.
    @Test func absentFieldsStayAndEmptyArraysRemove() throws {
        var overrides = AdvertisingDataOverrides()
        let config = try Self.load()
        let manufacturer = AdvertisingConfiguration.ManufacturerData(companyID: 0x004C, data: [1])
        let set = try overrides.update(set: "beacon", with: AdvertisingDataUpdate(manufacturerData: [manufacturer]), in: config)
        #expect(set.payloads.advertisingData.containsRun([0x05, 0x16, 0xAA, 0xFE, 0x10, 0xF6]), "service data kept")
        #expect(set.payloads.advertisingData.containsRun([0x04, 0xFF, 0x4C, 0x00, 0x01]))
        let removed = try overrides.update(set: "beacon", with: AdvertisingDataUpdate(serviceData: []), in: config)
        #expect(!removed.payloads.advertisingData.contains(0x16), "service data removed")
        #expect(removed.payloads.advertisingData.containsRun([0x04, 0xFF, 0x4C, 0x00, 0x01]), "the earlier manufacturer data stays")
        #expect(overrides.applied(to: config).advertisingSets[0].advertising.serviceData == [])
    }

    /// Too long for 31 bytes of legacy advertising data: the field and the bytes are named,
    /// and nothing changes.
    @Test func dataThatDoesNotFitIsRefusedNamingTheFieldAndTheBytes() throws {
        var overrides = AdvertisingDataOverrides()
        let config = try Self.load()
        _ = try overrides.update(set: "beacon", with: Self.counter([1]), in: config)
        let before = overrides
        #expect(throws: AdvertisingDataUpdateError.doesNotFit(.doesNotFit(
            field: "advertising_sets[0].manufacturer_data[0]", needed: 34, advertisingDataLeft: 28, scanResponseLeft: nil))) {
            try overrides.update(set: "beacon", with: Self.counter(Array(repeating: 7, count: 30)), in: config)
        }
        #expect(overrides == before, "the set stays as it was")
        let error = AdvertisingDataUpdateError.doesNotFit(.doesNotFit(
            field: "advertising_sets[0].manufacturer_data[0]", needed: 34, advertisingDataLeft: 28, scanResponseLeft: nil))
        #expect(error.isTooLong)
        #expect("\(error)" == "the new data does not fit, the set is unchanged: advertising_sets[0].manufacturer_data[0]: needs 34 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)")
    }

    /// One AD structure holds at most 254 bytes of type and data: invalid, not too long.
    @Test func anOversizedStructureIsInvalid() throws {
        var overrides = AdvertisingDataOverrides()
        #expect(throws: AdvertisingDataUpdateError.self) {
            try overrides.update(set: "primary", with: Self.counter(Array(repeating: 0, count: 300)), in: try Self.load())
        }
    }

    /// The controller's data length per set, when known, is checked too.
    @Test func theControllersLimitIsChecked() throws {
        var config = try Self.load()
        config.advertisingSets[0].advertising.pdus = .extended1M
        var overrides = AdvertisingDataOverrides()
        let limits = AdvertisingLimits(numberOfSets: 4, maximumDataLength: 100, extendedPDUs: true)
        _ = try overrides.update(set: "beacon", with: Self.counter(Array(repeating: 1, count: 60)), in: config, limits: limits)
        #expect(throws: AdvertisingDataUpdateError.doesNotFit(.exceedsControllerLimit(
            field: "advertising_sets[0]", payload: "advertising data", length: 133, maximum: 100))) {
            try overrides.update(set: "beacon", with: Self.counter(Array(repeating: 1, count: 120)), in: config, limits: limits)
        }
    }

    @Test func anUnknownSetIsNamedWithTheSetsThereAre() throws {
        var overrides = AdvertisingDataOverrides()
        #expect(throws: AdvertisingDataUpdateError.unknownSet("nope", sets: ["primary", "beacon"])) {
            try overrides.update(set: "nope", with: Self.counter([1]), in: try Self.load())
        }
        #expect("\(AdvertisingDataUpdateError.unknownSet("nope", sets: ["primary", "beacon"]))" == #"no advertising set "nope"; the sets are "primary", "beacon""#)
    }

    /// A reload keeps run-time data for the sets it keeps, except a field the new config
    /// changes, and data that no longer fits (dropped with a line saying so).
    @Test func aReloadKeepsRunTimeDataUnlessTheConfigChangesThatField() throws {
        let old = try Self.load()
        var overrides = AdvertisingDataOverrides()
        _ = try overrides.update(set: "primary", with: Self.counter([9]), in: old)
        _ = try overrides.update(set: "beacon", with: AdvertisingDataUpdate(serviceData: []), in: old)

        var renamed = old
        renamed.advertising.localName = "Renamed"
        var kept = overrides
        #expect(kept.reload(from: old, to: renamed).isEmpty)
        #expect(kept == overrides, "untouched fields: the run-time data stays")

        var edited = old
        edited.advertising.manufacturerData = [.init(companyID: 1, data: [1])]
        edited.advertisingSets = []
        var changed = overrides
        #expect(changed.reload(from: old, to: edited).isEmpty)
        #expect(changed.updates.isEmpty, "the config's new manufacturer data wins; the beacon set is gone")

        // 28 bytes of manufacturer data fill the advertising data beside the flags (the name
        // goes in the scan response); the new config is not scannable and adds a TX power.
        var crowded = old
        crowded.advertising.scannable = false
        crowded.advertising.txPower = 0
        var tooLong = overrides
        _ = try tooLong.update(set: "primary", with: Self.counter(Array(repeating: 1, count: 24)), in: old)
        let dropped = tooLong.reload(from: old, to: crowded)
        #expect(dropped.count == 1 && dropped[0].hasPrefix("advertising set \"primary\": its run-time data no longer fits"))
        #expect(tooLong.updates["primary"] == nil && tooLong.updates["beacon"] != nil)
    }
}

/// Handing a changed set to the transport (`Peripheral.replaceSet`).
@Suite struct PeripheralReplaceSetTests {
    var core = Peripheral(
        database: ATTFixture.database(), payloads: PeripheralTests.payloads, otherSets: [PeripheralAdvertisingSetsTests.beacon], maxConnections: 3)

    mutating func advertising() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true, set: "primary"), now: .zero)
        _ = core.handle(.advertisingChanged(true, set: "beacon"), now: .zero)
    }

    static func sets(_ o: [PeripheralOutput]) -> [[AdvertisingSet]] {
        o.compactMap { if case .setAdvertising(let sets) = $0 { sets } else { nil } }
    }

    /// New primary payloads while on the air: one request with every set, the new payloads in
    /// it; no start or stop event (the set stays on the air).
    @Test mutating func aChangedPrimaryIsHandedToTheTransport() {
        advertising()
        var payloads = PeripheralTests.payloads
        payloads.advertisingData += [0x03, 0xFF, 0xFF, 0xFF]
        let out = core.replaceSet(AdvertisingSet(id: "primary", path: "advertising", payloads: payloads))
        #expect(Self.sets(out) == [[AdvertisingSet(id: "primary", path: "advertising", payloads: payloads), PeripheralAdvertisingSetsTests.beacon]])
        #expect(!out.contains { if case .event = $0 { true } else { false } })
        #expect(core.payloads == payloads && core.isAdvertising)
        #expect(core.handle(.advertisingChanged(true, set: "primary"), now: .zero).isEmpty, "back on the air: nothing more to ask or tell")
        #expect(core.advertising == .advertising)
    }

    @Test mutating func aChangedOtherSetIsHandedToTheTransport() {
        advertising()
        var beacon = PeripheralAdvertisingSetsTests.beacon
        beacon.payloads.advertisingData = [0x02, 0x01, 0x06, 0x03, 0xFF, 0x34, 0x13]
        #expect(Self.sets(core.replaceSet(beacon)) == [[PeripheralTests.primary, beacon]])
        #expect(core.otherSets == [beacon])
    }

    /// The same payloads again, or a set turned off: nothing for the transport.
    @Test mutating func nothingChangedNothingAsked() {
        advertising()
        #expect(core.replaceSet(PeripheralAdvertisingSetsTests.beacon).isEmpty)
        #expect(core.replaceSet(PeripheralTests.primary).isEmpty)
        _ = core.setAdvertisingWanted(false, set: "beacon")
        var beacon = PeripheralAdvertisingSetsTests.beacon
        beacon.payloads.advertisingData = [0x02, 0x01, 0x06]
        #expect(core.replaceSet(beacon).isEmpty, "off: kept for when it is turned on")
        #expect(Self.sets(core.setAdvertisingWanted(true, set: "beacon")) == [[PeripheralTests.primary, beacon]])
        #expect(core.replaceSet(AdvertisingSet(id: "nope", path: "x", payloads: PeripheralTests.payloads)).isEmpty)
    }
}

extension Array where Element == UInt8 {
    /// Whether `run` occurs in order, contiguously.
    func containsRun(_ run: [UInt8]) -> Bool {
        guard run.count <= count else { return false }
        return (0...(count - run.count)).contains { Array(self[$0..<($0 + run.count)]) == run }
    }
}
