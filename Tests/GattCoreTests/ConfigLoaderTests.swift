import Testing
@testable import GattCore
import GattTestFixtures

@Suite struct ConfigLoaderTests {
    typealias F = ConfigFixture

    // MARK: - Valid configs

    @Test func heartRateExampleLoads() throws {
        let c = try F.heartRate()
        #expect(c.name == "Demo Heart Rate")
        #expect(c.appearance == 832)
        #expect(c.advertising.localName == "HR-Demo")
        #expect(c.advertising.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
        #expect(c.advertising.intervalMs.min == 100 && c.advertising.intervalMs.max == 150)
        #expect(c.services.count == 2)
        let hr = c.services[0]
        #expect(hr.id == "hr" && hr.uuid == BluetoothUUID(uuid16: 0x180D) && hr.isPrimary && hr.includes == [1])
        let m = hr.characteristics[0]
        #expect(m == CharacteristicDefinition(
            id: "hr_measurement", uuid: 0x2A37, properties: [.notify], permissions: [.readable], value: [0x00, 0x48],
            maxLength: 20, userDescription: "Heart Rate",
            descriptors: [DescriptorDefinition(uuid: 0x2904, value: [0x04, 0x00, 0xAF, 0x27, 0x01, 0x00, 0x00], permissions: [.readable])]))
        let level = c.services[1].characteristics[0]
        #expect(level == CharacteristicDefinition(id: "level", uuid: 0x2A19, properties: [.read, .notify], permissions: [.readable], value: [0x64]))
        #expect(c.services[1].isPrimary)
    }

    @Test func fullExampleLoadsEveryOption() throws {
        let c = try ConfigLoader.load(path: F.path("config/full-example.json")).gatt
        let a = c.advertising
        #expect(a.localName == "gattd-full")
        #expect(a.serviceUUIDs == [BluetoothUUID(uuid16: 0x181A), BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!])
        #expect(a.manufacturerData == [.init(companyID: 0xFFFF, data: [1, 2, 3, 4])])
        #expect(a.serviceData == [.init(uuid: BluetoothUUID(uuid16: 0x181A), data: [1, 2])])
        #expect(a.txPower == 0)
        #expect(a.appearance == 1344)
        #expect(a.iBeacon == nil)  // an iBeacon takes 30 of the 31 bytes: see config/ibeacon.json
        #expect(a.intervalMs.min == 152.5 && a.intervalMs.max == 211.25)
        #expect(a.ownAddressType == .random && a.connectable && a.scannable && a.maxConnections == 2)
        #expect(a.preferredConnection == PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 30, latency: 0, timeoutMs: 2000))

        #expect(c.services.map(\.id) == ["env", "env_config", "dis", "nus"])
        #expect(c.services[0].includes == [1, 2])
        #expect(c.services[1].isPrimary == false)
        #expect(c.services[1].uuid.uuid32 == 0x1234ABCD && c.services[1].uuid.uuid16 == nil)
        let humidity = c.services[0].characteristics[1]
        #expect(humidity.id == nil && humidity.permissions == [.readEncryptionRequired])
        let interval = c.services[1].characteristics[0]
        #expect(interval.valueSource == .persisted && interval.properties.contains([.reliableWrite, .writableAuxiliaries]))
        #expect(interval.permissions == [.readable, .writeEncryptionRequired])
        #expect(c.services[2].characteristics[0].value == Array("Example Corp".utf8))
        let rx = c.services[3].characteristics[0]
        #expect(rx.valueSource == .deferred && rx.permissions == [.writeable] && rx.maxLength == 244)
        #expect(c.services[3].characteristics[1].permissions == [])
    }

    @Test func iBeaconExampleLoads() throws {
        let c = try ConfigLoader.load(path: F.path("config/ibeacon.json")).gatt
        #expect(c.advertising.iBeacon == .init(uuid: BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0")!, major: 1, minor: 2, measuredPower: -59))
        #expect(try c.advertisingPayloads().isBeaconOnly)
    }

    @Test func defaultsWhenKeysAreAbsent() throws {
        let c = try F.load(#"{"name": "Min", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read", "write"]}]}]}"#)
        #expect(c.appearance == 0)
        #expect(c.advertising.localName == "Min")
        var expected = AdvertisingConfiguration()
        expected.localName = "Min"
        #expect(c.advertising == expected)
        let ch = c.services[0].characteristics[0]
        #expect(ch.permissions == [.readable, .writeable])
        #expect(ch.maxLength == 512 && ch.value == [] && ch.valueSource == .stored && ch.userDescription == nil)
        #expect(c.services[0].isPrimary && c.services[0].id == nil)
        #expect(try F.load(#"{"name": "No services"}"#).services == [])
    }

    @Test func valueEncodings() throws {
        let c = try F.load(#"{"name": "V", "services": [{"uuid": "180F", "characteristics": ["#
            + #"{"id": "a", "uuid": "2A19", "properties": ["read"], "value": {"hex": "0A:1b"}},"#
            + #"{"id": "b", "uuid": "2A19", "properties": ["read"], "value": {"utf8": "hé"}},"#
            + #"{"id": "c", "uuid": "2A19", "properties": ["read"], "value": {"base64": "AQID"}}]}]}"#)
        #expect(c.services[0].characteristics.map(\.value) == [[0x0A, 0x1B], [0x68, 0xC3, 0xA9], [1, 2, 3]])
    }

    // MARK: - JSON syntax

    @Test func invalidJSONReportsLineAndColumn() {
        #expect(F.errors("{\n  \"name\": \"x\",\n  \"services\": [,]\n}") == ["line 3, column 16: unexpected ','; expected a value"])
        #expect(F.errors(#"{"name": "x",}"#) == ["line 1, column 14: trailing comma before '}' is not allowed in JSON"])
        #expect(F.errors("{\"name\": \"x\" // hi\n}") == ["line 1, column 14: comments are not allowed in JSON"])
        #expect(F.errors("") == ["line 1, column 1: the file is empty; expected a JSON object"])
        #expect(F.errors(#"{"name": 'x'}"#) == ["line 1, column 10: strings must be in double quotes (\"), not single quotes"])
        #expect(F.errors(#"{"name": "é", "appearance": 0x10}"#) == ["line 1, column 29: invalid number (hex values go in a string, e.g. {\"hex\": \"0A\"})"])
    }

    @Test func topLevelMustBeAnObject() {
        #expect(F.errors("[]") == ["(top level): expected an object, got an array"])
    }

    // MARK: - Types

    @Test func wrongTypesNameBothSides() {
        #expect(F.errors(#"{"name": 5}"#) == ["name: expected a string, got a number (5)"])
        #expect(F.errors(#"{"name": "x", "services": {}}"#) == ["services: expected an array, got an object"])
    }

    @Test func booleansAndNumbersAreNotInterchangeable() {
        #expect(F.errors(#"{"name": "x", "appearance": true}"#) == ["appearance: expected an integer, got a boolean"])
        #expect(F.errors(#"{"name": "x", "services": [{"uuid": "180F", "primary": 1}]}"#)
            == ["services[0].primary: expected true or false, got a number (1)"])
        #expect(F.errors(#"{"name": "x", "appearance": 1.5}"#) == ["appearance: expected an integer, got 1.5"])
    }

    @Test func missingRequiredKeys() {
        #expect(F.errors(#"{"services": [{"characteristics": [{"uuid": "2A19"}]}]}"#) == [
            "name: required key is missing",
            "services[0].uuid: required key is missing",
            "services[0].characteristics[0].properties: required key is missing",
        ])
    }

    @Test func unknownKeysGetADidYouMeanHint() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "max_lenght": 20"#))
            == [#"services[0].characteristics[0].max_lenght: unknown key; did you mean "max_length"?"#])
        #expect(F.errors(#"{"name": "x", "colour": 1}"#)
            == ["colour: unknown key; allowed keys here: name, appearance, advertising, advertising_sets, connection, security, services, state_restoration, l2cap_channels, eatt, phy"])
    }

    @Test func stateRestorationIsADaemonSettingOnByDefault() throws {
        func settings(_ json: String) throws -> DaemonSettings { try ConfigLoader.load(data: Array(json.utf8)).settings }
        #expect(try settings(#"{"name": "x"}"#).stateRestoration)
        #expect(try !settings(#"{"name": "x", "state_restoration": false}"#).stateRestoration)
        #expect(F.errors(#"{"name": "x", "state_restoration": 0}"#) == ["state_restoration: expected true or false, got a number (0)"])
    }

    @Test func eattIsOnByDefaultAndABooleanSwitch() throws {
        #expect(try ConfigFixture.load(#"{"name": "x"}"#).enhancedATT)
        #expect(try !ConfigFixture.load(#"{"name": "x", "eatt": false}"#).enhancedATT)
        #expect(try ConfigFixture.load(#"{"name": "x", "eatt": true}"#).enhancedATT)
        #expect(F.errors(#"{"name": "x", "eatt": "yes"}"#).count == 1)
        #expect(F.errors(#"{"name": "x", "eatt": "yes"}"#).first?.hasPrefix("eatt: ") == true)
    }

    @Test func phyPreferredListsThePHYsEachConnectionIsAskedFor() throws {
        #expect(try ConfigFixture.load(#"{"name": "x"}"#).advertising.preferredPHYs == nil)
        #expect(try ConfigFixture.load(#"{"name": "x"}"#).advertising.connectionPHYs == [.le2M])
        #expect(try ConfigFixture.load(#"{"name": "x", "phy": {"preferred": ["coded", "1m"]}}"#).advertising.preferredPHYs == [.leCoded, .le1M])
        #expect(F.errors(#"{"name": "x", "phy": {"preferred": []}}"#) == [#"phy.preferred: expected at least one PHY ("1m", "2m", "coded")"#])
        #expect(F.errors(#"{"name": "x", "phy": {"preferred": ["3m"]}}"#) == [#"phy.preferred[0]: expected "1m", "2m" or "coded", got "3m""#])
        #expect(F.errors(#"{"name": "x", "phy": {"preferred": ["2m", "2m"]}}"#) == [#"phy.preferred[1]: "2m" is listed twice"#])
        #expect(F.errors(#"{"name": "x", "phy": {}}"#).first?.hasPrefix("phy") == true)
    }

    @Test func duplicateJSONKeys() {
        #expect(F.errors(#"{"name": "x", "name": "y"}"#) == ["name: key appears more than once in this object"])
    }

    // MARK: - Values

    @Test func uuidMustParse() {
        #expect(F.errors(#"{"name": "x", "services": [{"uuid": "180D", "characteristics": [{"uuid": "2A37", "properties": ["read"]}, {"uuid": "XYZ", "properties": ["read"]}]}]}"#)
            == [#"services[0].characteristics[1].uuid: "XYZ" is not a UUID; expected 4 hex digits ("180D"), 8 hex digits ("1234ABCD") or the 36-character form ("6e400001-b5a3-f393-e0a9-e50e24dcca9e")"#])
    }

    @Test func valueMustBeAnEncodingObject() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": "0048""#))
            == [#"services[0].characteristics[0].value: expected an object with one of "hex", "utf8" or "base64", got a string; write {"hex": "0048"} or {"utf8": "0048"}"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": {"hex": "004"}"#))
            == [#"services[0].characteristics[0].value.hex: odd number of hex digits (3); every byte needs two digits, e.g. "0A" not "A""#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": {"hexa": "00"}"#))
            == [#"services[0].characteristics[0].value.hexa: unknown value encoding; did you mean "hex"?"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": {"hex": "00", "utf8": "a"}"#))
            == [#"services[0].characteristics[0].value: expected exactly one of "hex", "utf8" or "base64", got 2 keys"#])
    }

    @Test func valueLongerThanMaxLength() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": {"hex": "010203"}, "max_length": 2"#))
            == ["services[0].characteristics[0].value: is 3 bytes, longer than max_length 2"])
        let big = String(repeating: "00", count: 513)
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": {"hex": ""#+big+#""}"#))
            == ["services[0].characteristics[0].value: is 513 bytes, longer than the 512-byte attribute limit"])
    }

    @Test func rangesAreChecked() {
        #expect(F.errors(#"{"name": "x", "appearance": 70000}"#) == ["appearance: 70000 is out of range; allowed: 0...65535"])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "max_length": 0"#))
            == ["services[0].characteristics[0].max_length: 0 bytes is out of range; allowed: 1...512 bytes"])
    }

    @Test func nameMustBeAUsableDeviceName() {
        #expect(F.errors(#"{"name": ""}"#) == ["name: must not be empty (it is the GAP Device Name)"])
        let long = String(repeating: "é", count: 125)
        #expect(F.errors(#"{"name": ""#+long+#""}"#) == ["name: is 250 bytes; the GAP Device Name holds at most 248 bytes of UTF-8"])
    }

    // MARK: - Properties and permissions

    @Test func unknownPropertyGetsAHint() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["notfy"]"#))
            == [#"services[0].characteristics[0].properties[0]: "notfy" is not a characteristic property; did you mean "notify"?"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "read"]"#))
            == [#"services[0].characteristics[0].properties[1]: "read" is already listed at services[0].characteristics[0].properties[0]"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": []"#))
            == [#"services[0].characteristics[0].properties: must list at least one property, e.g. ["read"]"#])
    }

    @Test func writePropertyNeedsWriteablePermission() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "write_without_response"], "permissions": ["readable"]"#))
            == [#"services[0].characteristics[0].properties: "write_without_response" needs a writeable permission: add "writeable" or "write_encryption_required" to permissions"#])
    }

    @Test func writeablePermissionNeedsWriteProperty() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "permissions": ["readable", "write_encryption_required"]"#))
            == [#"services[0].characteristics[0].permissions: "write_encryption_required" needs a write property: add "write" or "write_without_response" to properties"#])
    }

    @Test func readPropertyNeedsReadablePermission() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "notify"], "permissions": []"#))
            == [#"services[0].characteristics[0].properties: "read" needs a readable permission: add "readable" or "read_encryption_required" to permissions"#])
    }

    @Test func extendedPropertiesRules() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "reliable_write"]"#))
            == [#"services[0].characteristics[0].properties: "reliable_write" needs "write" (reliable writes are queued Write Requests)"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "writable_auxiliaries"]"#))
            == [#"services[0].characteristics[0].properties: "writable_auxiliaries" needs "user_description" (it makes the User Description descriptor writable)"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "extended_properties"]"#))
            == [#"services[0].characteristics[0].properties: "extended_properties" is set automatically with "reliable_write" or "writable_auxiliaries"; add one of them or remove it"#])
    }

    @Test func broadcastNeedsServerCharacteristicConfiguration() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read", "broadcast"]"#))
            == [#"services[0].characteristics[0].properties: "broadcast" needs a Server Characteristic Configuration descriptor: add {"uuid": "2903"} to descriptors"#])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "descriptors": [{"uuid": "2903"}]"#))
            == [#"services[0].characteristics[0].descriptors[0].uuid: 2903 (Server Characteristic Configuration) needs the "broadcast" property"#])
    }

    @Test func handlerAndPersist() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "handler": "stor""#))
            == [#"services[0].characteristics[0].handler: "stor" is not a handler; did you mean "store"?"#])
        #expect(F.errors(F.oneCharacteristic(#""id": "c", "uuid": "2A37", "properties": ["read"], "handler": "control", "persist": true"#))
            == [#"services[0].characteristics[0].persist: only "handler": "store" values can persist; with "control" the control client owns the value"#])
        // The same whichever key comes first.
        #expect(F.errors(F.oneCharacteristic(#""id": "c", "uuid": "2A37", "properties": ["read"], "persist": true, "handler": "control""#))
            == [#"services[0].characteristics[0].persist: only "handler": "store" values can persist; with "control" the control client owns the value"#])
    }

    /// `"handler"` and `"persist"` map to one `CharacteristicValueSource`.
    @Test func handlerAndPersistMapToTheValueSource() throws {
        let cases: [(String, CharacteristicValueSource)] = [
            ("", .stored),
            (#", "handler": "store""#, .stored),
            (#", "persist": false"#, .stored),
            (#", "handler": "store", "persist": true"#, .persisted),
            (#", "persist": true"#, .persisted),
            (#", "handler": "control""#, .deferred),
            (#", "handler": "control", "persist": false"#, .deferred),
        ]
        for (keys, source) in cases {
            let c = try F.load(F.oneCharacteristic(#""id": "c", "uuid": "2A37", "properties": ["read"]"# + keys))
            #expect(c.services[0].characteristics[0].valueSource == source, "\(keys)")
        }
    }

    // MARK: - Descriptors

    @Test func autoAddedDescriptorsMustNotBeListed() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["notify"], "descriptors": [{"uuid": "2902"}, {"uuid": "2900"}, {"uuid": "2901", "value": {"utf8": "x"}}]"#)) == [
            #"services[0].characteristics[0].descriptors[0].uuid: 2902 (Client Characteristic Configuration) is added automatically for "notify" and "indicate"; remove this descriptor"#,
            #"services[0].characteristics[0].descriptors[1].uuid: 2900 (Characteristic Extended Properties) is added automatically for "reliable_write" and "writable_auxiliaries"; remove this descriptor"#,
            #"services[0].characteristics[0].descriptors[2].uuid: 2901 (Characteristic User Description) is added automatically from "user_description"; set that key instead"#,
        ])
    }

    @Test func descriptorRules() {
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "descriptors": [{"uuid": "2803"}]"#))
            == ["services[0].characteristics[0].descriptors[0].uuid: 2803 (Characteristic) is an attribute declaration type, not a descriptor"])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "descriptors": [{"uuid": "2904", "value": {"hex": "0400ad2701000000"}}]"#))
            == ["services[0].characteristics[0].descriptors[0].value: a Characteristic Presentation Format (2904) value is 7 bytes (format, exponent, unit, namespace, description), got 8"])
        #expect(F.errors(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "descriptors": [{"uuid": "2906"}, {"uuid": "2906"}]"#))
            == ["services[0].characteristics[0].descriptors[1].uuid: 2906 (Valid Range) is already used by services[0].characteristics[0].descriptors[0] of this characteristic"])
    }

    // MARK: - Ids and includes

    @Test func duplicateIDs() {
        #expect(F.errors(#"{"name": "x", "services": [{"id": "hr", "uuid": "180D", "characteristics": [{"id": "hr", "uuid": "2A37", "properties": ["read"]}]}, {"id": "hr", "uuid": "180F"}]}"#) == [
            #"services[0].characteristics[0].id: id "hr" is already used by services[0]"#,
            #"services[1].id: id "hr" is already used by services[0]"#,
        ])
    }

    @Test func idsMustBeUsable() {
        #expect(F.errors(#"{"name": "x", "services": [{"id": "face", "uuid": "180D"}, {"id": "my service", "uuid": "180F"}, {"id": "appearance", "uuid": "180A"}]}"#) == [
            #"services[0].id: "face" reads as a UUID; choose an id that is not 4 or 8 hex digits (characteristics are also addressed by UUID)"#,
            #"services[1].id: "my service" is not a valid id: ' ' is not allowed; use letters, digits, '_', '-' and '.'"#,
            #"services[2].id: "appearance" is reserved for the built-in Appearance characteristic"#,
        ])
    }

    @Test func includesMustNameAService() {
        #expect(F.errors(#"{"name": "x", "services": [{"id": "battery", "uuid": "180F"}, {"id": "hr", "uuid": "180D", "includes": ["batt"]}]}"#)
            == [#"services[1].includes[0]: no service with id "batt"; did you mean "battery"?"#])
        #expect(F.errors(#"{"name": "x", "services": [{"id": "hr", "uuid": "180D", "includes": ["hr"]}]}"#)
            == ["services[0].includes[0]: a service cannot include itself"])
    }

    @Test func includeCyclesAreRejected() {
        #expect(F.errors(#"{"name": "x", "services": [{"id": "a", "uuid": "180D", "includes": ["b"]}, {"id": "b", "uuid": "180F", "includes": ["c"]}, {"id": "c", "uuid": "180A", "includes": ["a"]}]}"#)
            == ["services[2].includes[0]: include cycle: a → b → c → a"])
    }

    @Test func builtInServicesCannotBeConfigured() {
        #expect(F.errors(#"{"name": "x", "services": [{"uuid": "1800"}]}"#)
            == [#"services[0].uuid: 1800 (Generic Access) is built in: gattd adds it from the top-level "name" and "appearance""#])
    }

    @Test func controlCharacteristicsNeedAnAddress() {
        #expect(F.errors(#"{"name": "x", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "handler": "control"}, {"uuid": "2A19", "properties": ["read"]}]}]}"#)
            == [#"services[0].characteristics[0].id: required: this characteristic has "handler": "control" and is addressed by id or UUID, but its UUID 2A19 is also used by services[0].characteristics[1]"#])
    }

    @Test func handleSpaceIsLimited() {
        // 13 built-in + 1 service + 2 (declaration, value) + 65520 descriptors = 65536 attributes.
        let d = Array(repeating: #"{"uuid": "2904", "value": {"hex": "04000000000000"}}"#, count: 65520).joined(separator: ",")
        let json = #"{"name": "x", "services": [{"uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "descriptors": ["# + d + "]}]}]}"
        #expect(F.errors(json) == ["services: the database needs 65536 attributes; the handle space holds at most 65535"])
    }

    // MARK: - advertising / connection

    @Test func advertisingRules() {
        #expect(F.errors(#"{"name": "x", "advertising": {"interval_ms": [200, 100]}}"#)
            == ["advertising.interval_ms: minimum 200 ms is greater than maximum 100 ms"])
        #expect(F.errors(#"{"name": "x", "advertising": {"interval_ms": [10, 100], "tx_power": 21, "own_address_type": "static"}}"#) == [
            "advertising.interval_ms[0]: 10 ms is out of range; allowed: 20...10240 ms",
            "advertising.tx_power: 21 dBm is out of range; allowed: -127...20 dBm",
            #"advertising.own_address_type: "static" is not an address type; expected one of: "public", "random", "rpa""#,
        ])
        #expect(F.errors(#"{"name": "x", "advertising": {"own_address_type": "rpa", "rpa_timeout_s": 0}}"#)
            == ["advertising.rpa_timeout_s: 0 s is out of range; allowed: 1...3600 s"])
        let rpa = (try? ConfigLoader.load(data: Array(#"{"name": "x", "advertising": {"own_address_type": "rpa", "rpa_timeout_s": 60}}"#.utf8)))?.gatt
        #expect(rpa?.advertising.ownAddressType == .rpa && rpa?.advertising.rpaTimeout == .seconds(60))
        #expect(F.errors(#"{"name": "x", "advertising": {"ibeacon": {"uuid": "180D", "major": 1, "minor": 70000}}}"#) == [
            #"advertising.ibeacon.uuid: an iBeacon proximity UUID must be written in full (36 characters, e.g. "e2c56db5-dffb-48d2-b060-d0f5a71096e0")"#,
            "advertising.ibeacon.minor: 70000 is out of range; allowed: 0...65535",
        ])
        #expect(F.errors(#"{"name": "x", "advertising": {"local_name": "", "service_uuids": ["180D", "180d"], "manufacturer_data": [{"company_id": 1}]}}"#) == [
            #"advertising.local_name: must not be empty; leave "local_name" out to advertise the top-level "name""#,
            "advertising.service_uuids[1]: 180D is already listed at advertising.service_uuids[0]",
            "advertising.manufacturer_data[0].data: required key is missing",
        ])
    }

    @Test func appearanceFlagAdvertisesTheTopLevelAppearance() throws {
        #expect(try F.load(#"{"name": "x", "appearance": 833, "advertising": {"appearance": true}}"#).advertising.appearance == 833)
        #expect(try F.load(#"{"name": "x", "appearance": 833, "advertising": {"appearance": false}}"#).advertising.appearance == nil)
    }

    @Test func connectionPreferredIsRangeChecked() {
        #expect(F.errors(#"{"name": "x", "connection": {"preferred": {"interval_ms": [5, 30], "latency": 500}}}"#) == [
            "connection.preferred.timeout_ms: required key is missing",
            "connection.preferred.interval_ms[0]: 5 ms is out of range; allowed: 7.5...4000 ms",
            "connection.preferred.latency: 500 connection events is out of range; allowed: 0...499 connection events",
        ])
    }

    // MARK: - All at once

    @Test func allErrorsAreReportedAtOnceInDocumentOrder() {
        let json = """
            {
              "name": "",
              "appearance": -1,
              "services": [
                { "id": "hr", "uuid": "180D", "includes": ["nope"],
                  "characteristics": [
                    { "uuid": "2A37", "properties": ["write"], "permissions": ["readable"], "max_lenght": 4 },
                    { "uuid": "ZZZZ", "properties": ["read"], "value": {"hex": "0"} }
                  ] }
              ],
              "advertising": { "interval_ms": [1] }
            }
            """
        #expect(F.errors(json) == [
            "name: must not be empty (it is the GAP Device Name)",
            "appearance: -1 is out of range; allowed: 0...65535",
            #"services[0].includes[0]: no service with id "nope""#,
            #"services[0].characteristics[0].properties: "write" needs a writeable permission: add "writeable" or "write_encryption_required" to permissions"#,
            #"services[0].characteristics[0].max_lenght: unknown key; did you mean "max_length"?"#,
            #"services[0].characteristics[1].uuid: "ZZZZ" is not a UUID; expected 4 hex digits ("180D"), 8 hex digits ("1234ABCD") or the 36-character form ("6e400001-b5a3-f393-e0a9-e50e24dcca9e")"#,
            #"services[0].characteristics[1].value.hex: odd number of hex digits (1); every byte needs two digits, e.g. "0A" not "A""#,
            "advertising.interval_ms: expected [minimum, maximum] (2 numbers), got 1 element",
        ])
    }

    @Test func unreadableFileIsAReadFailure() {
        do {
            _ = try ConfigLoader.load(path: "/nonexistent/gattd.json")
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.isReadFailure)
            #expect(error.errors == [ConfigError(path: "(file)", message: "cannot read /nonexistent/gattd.json: No such file or directory")])
        }
        do {
            _ = try ConfigLoader.load(path: F.path("config"))
            Issue.record("loaded a directory")
        } catch {
            #expect(error.errors.map(\.message) == ["cannot read \(F.path("config")): it is a directory"])
        }
    }
}
