import Testing
@testable import GattCore
import GattTestFixtures

private typealias F = ConfigFixture

/// 120 bytes 00 01 … 77, as hex.
private let hex120 = (0..<120).map { AttributeValueLiteral.hexString([UInt8($0)]) }.joined()
private let bytes120 = (0..<120).map { UInt8($0) }

/// The issue's example, exactly as given, with the required top-level name.
private let issueExample = #"""
    {"name": "gattd sets",
    "advertising": {"local_name": "SetsA", "service_uuids": ["180D"]},
    "advertising_sets": [
      {"id": "beacon", "connectable": false, "scannable": false,
       "ibeacon": {"uuid": "e2c56db5-dffb-48d2-b060-d0f5a71096e0", "major": 7, "minor": 9}},
      {"id": "long", "extended": true, "connectable": false, "scannable": false,
       "manufacturer_data": [{"company_id": 65535, "data": {"hex": "\#(hex120)"}}]}]
    }
    """#

/// `{"name": "S", "advertising_sets": [ELEMENTS]}`.
private func sets(_ elements: String) -> String { #"{"name": "S", "advertising_sets": ["# + elements + "]}" }

/// `advertising_sets` in the config: the model, the defaults, every error naming its path.
@Suite struct ConfigAdvertisingSetsTests {
    @Test func issueExampleLoadsAsGiven() throws {
        let c = try F.load(issueExample)
        #expect(c.advertising.localName == "SetsA" && c.advertising.pdus == .legacy)
        #expect(c.advertisingSets.map(\.id) == ["beacon", "long"])
        #expect(c.advertisingSets.map(\.path) == ["advertising_sets[0]", "advertising_sets[1]"])

        let beacon = c.advertisingSets[0].advertising
        #expect(beacon.iBeacon == .init(uuid: BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0")!, major: 7, minor: 9, measuredPower: -59))
        #expect(beacon.pdus == .legacy && !beacon.connectable && !beacon.scannable && beacon.localName == nil)

        let long = c.advertisingSets[1].advertising
        #expect(long.pdus == .extended(primaryPHY: .le1M, secondaryPHY: .le1M))
        #expect(long.manufacturerData == [.init(companyID: 0xFFFF, data: bytes120)])
        #expect(long.localName == nil && long.maxConnections == nil)

        let built = try c.allAdvertisingSets()
        #expect(built.map(\.id) == ["primary", "beacon", "long"])
        #expect(built.map(\.path) == ["advertising", "advertising_sets[0]", "advertising_sets[1]"])
        // The primary set, exactly as without sets.
        #expect(built[0].payloads == (try c.advertisingPayloads()))
        #expect(built[0].payloads.advertisingData == h("02 01 06  06 09 53 65 74 73 41  03 03 0D 18"))
        // The iBeacon: Apple's 30 bytes, ADV_NONCONN_IND, legacy.
        let b = built[1].payloads
        #expect(b.advertisingData == h("02 01 06 1A FF 4C 00 02 15 E2 C5 6D B5 DF FB 48 D2 B0 60 D0 F5 A7 10 96 E0 00 07 00 09 C5"))
        #expect(b.isBeaconOnly && b.pdus == .legacy && b.parameters.advertisingType == .nonConnectableUndirected && b.scanResponseData == [])
        // 127 bytes of advertising data on extended PDUs, no scan response.
        let l = built[2].payloads
        #expect(l.advertisingData == h("02 01 06  7B FF FF FF") + bytes120)
        #expect(l.advertisingData.count == 127 && l.scanResponseData == [])
        #expect(l.pdus == .extended(primaryPHY: .le1M, secondaryPHY: .le1M))
        #expect(l.advertisingEventProperties.rawValue == 0x0000 && !l.isConnectable && !l.isScannable)
    }

    @Test func exampleFileIsTheIssueExample() throws {
        let file = try ConfigLoader.load(path: F.path("config/advertising-sets.json")).gatt
        let inline = try F.load(issueExample)
        #expect(file.advertisingSets == inline.advertisingSets)
        #expect(try file.allAdvertisingSets().map(\.payloads) == inline.allAdvertisingSets().map(\.payloads))
    }

    @Test func setsHaveNoNameUnlessTheySayAndShareTheAddressType() throws {
        let c = try F.load(#"""
            {"name": "Dev", "appearance": 832, "advertising": {"own_address_type": "random", "rpa_timeout_s": 60},
             "advertising_sets": [{"id": "a", "service_uuids": ["180F"]}, {"id": "b", "local_name": "B", "appearance": true}]}
            """#)
        let a = c.advertisingSets[0].advertising
        #expect(a.localName == nil && a.ownAddressType == .random && a.rpaTimeout == .seconds(60))
        #expect(a.connectable && a.scannable && a.pdus == .legacy)  // legacy sets keep `advertising`'s defaults
        let built = try c.allAdvertisingSets()
        #expect(built[1].payloads.advertisingData == h("02 01 06 03 03 0F 18"))
        #expect(built[1].payloads.parameters.ownAddressType == .random)
        #expect(built[2].payloads.advertisingData == h("02 01 06 02 09 42 03 19 40 03"))
        #expect(built[2].payloads.facts.nameField == "advertising_sets[1].local_name")
    }

    @Test func extendedSetDefaultsAndPHYs() throws {
        let c = try F.load(sets(#"""
            {"id": "conn", "extended": true, "local_name": "C"},
            {"id": "far", "extended": true, "primary_phy": "coded", "secondary_phy": "coded", "connectable": false, "local_name": "F"},
            {"id": "scan", "extended": true, "secondary_phy": "2m", "connectable": false, "scannable": true, "local_name": "S"}
            """#))
        let conn = c.advertisingSets[0].advertising
        #expect(conn.connectable && !conn.scannable)  // `scannable` defaults to false on extended sets
        #expect(c.advertisingSets[1].advertising.pdus == .extended(primaryPHY: .leCoded, secondaryPHY: .leCoded))
        #expect(c.advertisingSets[2].advertising.pdus == .extended(primaryPHY: .le1M, secondaryPHY: .le2M))
        let built = try c.allAdvertisingSets()
        #expect(built[1].payloads.advertisingEventProperties.rawValue == 0x0001 && built[1].payloads.scanResponseData == [])
        #expect(built[1].payloads.advertisingData == h("02 01 06 02 09 43"))
        // Scannable extended: no advertising data, everything (no flags) in the scan response.
        #expect(built[3].payloads.advertisingEventProperties.rawValue == 0x0002)
        #expect(built[3].payloads.advertisingData == [] && built[3].payloads.scanResponseData == h("02 09 53"))
    }

    // MARK: - Bad input

    @Test func unknownKeyInASetNamesThePath() {
        #expect(F.errors(sets(#"{"id": "a", "colour": 1}"#)) == [
            "advertising_sets[0].colour: unknown key; allowed keys here: local_name, service_uuids, manufacturer_data, service_data, tx_power, "
                + "appearance, ibeacon, interval_ms, connectable, scannable, id, extended, primary_phy, secondary_phy"
        ])
        #expect(F.errors(sets(#"{"id": "a", "extnded": true}"#)) == [#"advertising_sets[0].extnded: unknown key; did you mean "extended"?"#])
        #expect(F.errors(sets(#"{"id": "a", "ibeacon": {"uuid": "e2c56db5-dffb-48d2-b060-d0f5a71096e0", "major": 1, "minor": 2, "power": 3}}"#))
            == ["advertising_sets[0].ibeacon.power: unknown key; allowed keys here: uuid, major, minor, measured_power"])
        #expect(F.errors(#"{"name": "S", "advertising_sets": {"id": "a"}}"#) == ["advertising_sets: expected an array, got an object"])
        #expect(F.errors(sets("7")) == ["advertising_sets[0]: expected an object, got a number (7)"])
    }

    @Test func globalKeysAreRefusedInASetAndSetKeysInThePrimary() {
        #expect(F.errors(sets(#"{"id": "a", "max_connections": 1, "own_address_type": "random", "rpa_timeout_s": 5}"#)) == [
            #"advertising_sets[0].max_connections: not allowed in an advertising set: the connection limit is global; set it in "advertising""#,
            #"advertising_sets[0].own_address_type: not allowed in an advertising set: every set advertises with the address "advertising".own_address_type chooses; set it there"#,
            #"advertising_sets[0].rpa_timeout_s: not allowed in an advertising set: every set uses the private address "advertising".rpa_timeout_s renews; set it there"#,
        ])
        #expect(F.errors(#"{"name": "S", "advertising": {"id": "main", "extended": true}}"#) == [
            #"advertising.id: the primary set's id is always "primary"; "id" belongs to the elements of "advertising_sets""#,
            #"advertising.extended: the primary set uses legacy PDUs (seen by every scanner); for extended advertising add an element with "extended": true to "advertising_sets""#,
        ])
    }

    @Test func idsAreRequiredUniqueAndNotThePrimary() {
        #expect(F.errors(sets(#"{"local_name": "x"}"#)) == ["advertising_sets[0].id: required key is missing"])
        #expect(F.errors(sets(#"{"id": "a"}, {"id": "b"}, {"id": "a"}"#)) == [#"advertising_sets[2].id: "a" is already the id of advertising_sets[0]"#])
        #expect(F.errors(sets(#"{"id": "primary"}"#)) == [#"advertising_sets[0].id: "primary" is the id of the primary set ("advertising"); choose another"#])
        #expect(F.errors(sets(#"{"id": ""}"#)) == ["advertising_sets[0].id: must not be empty"])
        #expect(F.errors(sets(#"{"id": "a b"}"#)) == [#"advertising_sets[0].id: "a b" is not a valid id: ' ' is not allowed; use letters, digits, '_', '-' and '.'"#])
        #expect(F.errors(sets(#"{"id": 1}"#)) == ["advertising_sets[0].id: expected a string, got a number (1)"])
        let long = String(repeating: "x", count: 65)
        #expect(F.errors(sets(#"{"id": "\#(long)"}"#)) == ["advertising_sets[0].id: is 65 bytes; a set id has at most 64"])
    }

    @Test func tooMuchDataForLegacyPDUsNamesTheSetPathAndTheBytes() {
        let big = #"{"id": "big", "connectable": false, "scannable": false, "manufacturer_data": [{"company_id": 65535, "data": {"hex": "\#(hex120)"}}]}"#
        #expect(F.errors(sets(big)) == [
            "advertising_sets[0].manufacturer_data[0]: needs 124 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)"
        ])
        // Scannable (the legacy default): the scan response is counted too.
        let scannable = #"{"id": "big", "manufacturer_data": [{"company_id": 1, "data": {"hex": "\#(hex120)"}}]}"#
        #expect(F.errors(sets(#"{"id": "ok"}, "# + scannable)) == [
            "advertising_sets[1].manufacturer_data[0]: needs 124 bytes, 28 left in the advertising data and 31 in the scan response"
        ])
    }

    @Test func phyKeysNeedExtended() {
        #expect(F.errors(sets(#"{"id": "a", "primary_phy": "coded"}"#))
            == [#"advertising_sets[0].primary_phy: only for extended sets: add "extended": true (legacy PDUs are always on the LE 1M PHY)"#])
        #expect(F.errors(sets(#"{"id": "a", "extended": false, "secondary_phy": "2m"}"#))
            == [#"advertising_sets[0].secondary_phy: only for extended sets: add "extended": true (legacy PDUs are always on the LE 1M PHY)"#])
        // A broken `extended` is one error, not two.
        #expect(F.errors(sets(#"{"id": "a", "extended": "yes", "primary_phy": "coded"}"#))
            == ["advertising_sets[0].extended: expected true or false, got a string"])
    }

    @Test func badPHYValues() {
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "connectable": false, "primary_phy": "2m"}"#)) == [
            #"advertising_sets[0].primary_phy: "2m" is not a primary advertising PHY: the primary advertising channels use LE 1M or LE Coded (Core Spec Vol 4 Part E §7.8.53); "2m" is for "secondary_phy""#
        ])
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "primary_phy": "1M"}"#))
            == [#"advertising_sets[0].primary_phy: "1M" is not a primary advertising PHY; did you mean "1m"?"#])
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "secondary_phy": "fast"}"#))
            == [#"advertising_sets[0].secondary_phy: "fast" is not a secondary advertising PHY; expected one of: "1m", "2m", "coded""#])
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "secondary_phy": 2}"#)) == ["advertising_sets[0].secondary_phy: expected a string, got a number (2)"])
    }

    @Test func extendedConnectableAndScannableIsAnError() {
        let reason = #"an extended advertising set cannot be both connectable and scannable (Core Spec Vol 4 Part E §7.8.53); leave "scannable" out (the data then goes in the advertising data) or set "connectable": false (then it all goes in the scan response)"#
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "scannable": true}"#)) == ["advertising_sets[0].scannable: " + reason])
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "connectable": true, "scannable": true}"#)) == ["advertising_sets[0].scannable: " + reason])
        // A scannable extended set with nothing to put in its scan response.
        #expect(F.errors(sets(#"{"id": "a", "extended": true, "connectable": false, "scannable": true}"#)) == [
            #"advertising_sets[0].scannable: a scannable extended set sends all its data in the scan response, and this one has none; add "local_name" or other data, or leave "scannable" out"#
        ])
    }

    @Test func connectableExtendedDataFitsOneAuxiliaryPDU() throws {
        // 245 bytes: flags (3), two manufacturer data structures of 121 bytes.
        func set(_ second: Int) -> String {
            let d1 = String(repeating: "ab", count: 117), d2 = String(repeating: "cd", count: second)
            return sets(#"{"id": "c", "extended": true, "manufacturer_data": [{"company_id": 1, "data": {"hex": "\#(d1)"}}, {"company_id": 2, "data": {"hex": "\#(d2)"}}]}"#)
        }
        #expect(try F.load(set(117)).allAdvertisingSets()[1].payloads.advertisingData.count == 245)
        #expect(F.errors(set(118)) == [
            "advertising_sets[0].manufacturer_data[1]: needs 122 bytes, 121 left in the advertising data (no scan response: the advertisement is not scannable)"
        ])
    }

    @Test func atMost239Sets() throws {
        let many = (0..<240).map { #"{"id": "s\#($0)", "connectable": false, "scannable": false}"# }.joined(separator: ",")
        #expect(F.errors(sets(many)) == [
            "advertising_sets[239]: at most 239 advertising sets besides the primary one (Advertising_Handle 0x00...0xEF, Core Spec Vol 4 Part E §7.8.53); this array has 240"
        ])
        let fine = (0..<239).map { #"{"id": "s\#($0)", "connectable": false, "scannable": false}"# }.joined(separator: ",")
        #expect(try F.load(sets(fine)).advertisingSets.count == 239)
    }

    @Test func everySetsErrorsAreReportedTogether() {
        let over = #"{"company_id": 1, "data": {"hex": "\#(hex120)"}}"#
        #expect(F.errors(#"""
            {"name": "S", "advertising": {"manufacturer_data": [\#(over)], "scannable": false},
             "advertising_sets": [{"id": "a", "scannable": false, "manufacturer_data": [\#(over)]}]}
            """#) == [
                "advertising.manufacturer_data[0]: needs 124 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)",
                "advertising_sets[0].manufacturer_data[0]: needs 124 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)",
            ])
    }
}
