import Testing
@testable import GattCore
import GattTestFixtures

/// `AdvertisingLimits.violations(of:)`: built sets against what the controller has.
@Suite struct AdvertisingLimitsTests {
    /// The issue's example: the primary, an iBeacon (legacy) and 127 bytes on extended PDUs.
    static func example() throws -> [AdvertisingSet] {
        try ConfigLoader.load(path: ConfigFixture.path("config/advertising-sets.json")).gatt.allAdvertisingSets()
    }

    @Test func everythingFits() throws {
        let sets = try Self.example()
        #expect(AdvertisingLimits(numberOfSets: 3, maximumDataLength: 1650, extendedPDUs: true).violations(of: sets) == [])
        #expect(AdvertisingLimits(numberOfSets: 16, maximumDataLength: 251, extendedPDUs: true).violations(of: sets) == [])
        // Legacy sets alone take turns on a legacy controller: no limit on their number.
        #expect(AdvertisingLimits.legacy.violations(of: Array(sets.prefix(2))) == [])
    }

    @Test func extendedSetOnALegacyController() throws {
        let v = AdvertisingLimits.legacy.violations(of: try Self.example())
        #expect(v == [.extendedNotSupported(field: "advertising_sets[1].extended")])
        #expect(v.map(\.description) == [
            #"advertising_sets[1].extended: extended advertising PDUs need LE Extended Advertising, and this controller has legacy advertising only; set "extended": false (the set must then fit 31 bytes of advertising data and 31 of scan response)"#
        ])
    }

    @Test func moreSetsThanTheControllerHas() throws {
        let sets = try Self.example()
        let v = AdvertisingLimits(numberOfSets: 1, maximumDataLength: 1650, extendedPDUs: true).violations(of: sets)
        #expect(v == [
            .tooManySets(field: "advertising_sets[0]", set: 2, configured: 3, supported: 1),
            .tooManySets(field: "advertising_sets[1]", set: 3, configured: 3, supported: 1),
        ])
        #expect(v[1].description == #"advertising_sets[1]: the controller has 1 advertising set; this is set 3 of 3 (the primary set "advertising" is set 1)"#)
        #expect(AdvertisingLimits(numberOfSets: 2, maximumDataLength: 1650, extendedPDUs: true).violations(of: sets).map(\.description) == [
            #"advertising_sets[1]: the controller has 2 advertising sets; this is set 3 of 3 (the primary set "advertising" is set 1)"#
        ])
    }

    @Test func dataLongerThanTheControllerTakes() throws {
        var sets = try Self.example()
        let v = AdvertisingLimits(numberOfSets: 4, maximumDataLength: 100, extendedPDUs: true).violations(of: sets)
        #expect(v == [.exceedsControllerLimit(field: "advertising_sets[1]", payload: "advertising data", length: 127, maximum: 100)])
        #expect(v.map(\.description) == ["advertising_sets[1]: the advertising data is 127 bytes; the controller takes at most 100 bytes per set"])
        // A scan response is checked too, and the primary set is named by its path.
        sets[0].payloads.scanResponseData = [UInt8](repeating: 0, count: 31)
        // (the iBeacon's 30 bytes fit exactly).
        #expect(AdvertisingLimits(numberOfSets: 4, maximumDataLength: 30, extendedPDUs: true).violations(of: sets) == [
            .exceedsControllerLimit(field: "advertising", payload: "scan response", length: 31, maximum: 30),
            .exceedsControllerLimit(field: "advertising_sets[1]", payload: "advertising data", length: 127, maximum: 30),
        ])
    }
}
