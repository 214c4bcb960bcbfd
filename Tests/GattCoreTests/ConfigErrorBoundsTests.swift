import Testing
@testable import GattCore
import GattTestFixtures

/// However large or broken a config is, its error report stays small: at most
/// `ConfigErrors.reportLimit` errors then one "… and N more errors" line, and long
/// keys and values quoted shortened. The inputs are generated here; the checks are
/// on sizes and line counts (the 13 s / 332 MB cases were superlinear work on them).
@Suite struct ConfigErrorBoundsTests {
    typealias F = ConfigFixture

    /// The thrown errors of a config that must fail (an empty report if it loads).
    static func report(_ json: String) -> ConfigErrors {
        do {
            _ = try F.load(json)
            return ConfigErrors([])
        } catch {
            return error
        }
    }

    static func services(_ count: Int, _ body: (Int) -> String) -> String {
        #"{"name": "x", "services": ["# + (0..<count).map(body).joined(separator: ",") + "]}"
    }

    static let allowedServiceKeys = "allowed keys here: id, uuid, primary, includes, characteristics"

    // MARK: - Count

    @Test func atMostTheFirstHundredErrorsThenACount() {
        let r = Self.report(Self.services(5000) { #"{"uuid": "180D", "bogus": \#($0)}"# })
        #expect(r.totalCount == 5000)
        #expect(r.errors.count == ConfigErrors.reportLimit)
        let lines = r.lines(prefix: "gattd.json: ")
        #expect(lines.count == 101)
        #expect(lines.first == "gattd.json: services[0].bogus: unknown key; " + Self.allowedServiceKeys)
        #expect(lines[99] == "gattd.json: services[99].bogus: unknown key; " + Self.allowedServiceKeys)
        #expect(lines.last == "… and 4900 more errors")
        #expect(r.description.split(separator: "\n").count == 101)
    }

    /// Errors found late (includes are resolved after parsing) still sort into
    /// document order among the ones kept from the parse.
    @Test func theFirstHundredAreInDocumentOrder() {
        let r = Self.report(Self.services(250) { #"{"id": "s\#($0)", "uuid": "180D", "includes": ["nope"], "bogus": 1}"# })
        #expect(r.totalCount == 500)
        let expected = (0..<50).flatMap { i in
            [#"services[\#(i)].includes[0]: no service with id "nope""#, "services[\(i)].bogus: unknown key; " + Self.allowedServiceKeys]
        }
        #expect(r.errors.map(\.description) == expected)
        #expect(r.lines().last == "… and 400 more errors")
    }

    @Test func aFewErrorsHaveNoCountLine() {
        let r = Self.report(Self.services(3) { #"{"uuid": "180D", "bogus": \#($0)}"# })
        #expect(r.totalCount == 3 && r.omittedCount == 0 && r.lines().count == 3)
        #expect(ConfigErrors((0..<101).map { ConfigError(path: "p\($0)", message: "m") }).lines().last == "… and 1 more error")
    }

    /// A 3 MB config full of errors (it gave 128 MB of output).
    @Test func aLargeBrokenConfigGivesASmallReport() {
        let json = Self.services(22_000) { i in
            #"{"id": "s\#(i)", "uuid": "XYZ", "includes": ["s\#(i)", "t\#(i)"], "characteristics": [{"uuid": "2A37", "properties": ["reed"], "colour": 1}]}"#
        }
        #expect(json.utf8.count > 3_000_000)
        let r = Self.report(json)
        #expect(r.totalCount >= 110_000)
        #expect(r.description.utf8.count < 20_000)
        #expect(r.lines().count == 101)
    }

    // MARK: - Long keys and values

    @Test func aLongUnknownKeyIsQuotedShortened() {
        let key = String(repeating: "k", count: 2 << 20)
        let r = Self.report(#"{"name": "x", ""# + key + #"": 1}"#)
        #expect(r.errors.count == 1)
        #expect(r.description == "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk… (2097152 bytes): unknown key; allowed keys here: name, appearance, advertising, advertising_sets, connection, security, services, state_restoration, l2cap_channels, eatt, phy")
        // A long key that would otherwise get a hint, and one in a syntax error.
        let r2 = Self.report(#"{"name": "x", "services": [{"uuid": "180D", "includes"# + key + #"": 1}]}"#)
        #expect(r2.description.utf8.count < 200 && r2.description.hasSuffix(#"… (2097160 bytes): unknown key; "# + Self.allowedServiceKeys))
        let r3 = Self.report(#"{"name": "x", ""# + key + #"" 1}"#)
        #expect(r3.description == #"line 1, column 2097170: expected ':' after the key "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk…" (2097152 bytes), got '1'"#)
    }

    @Test func aMillionDigitNumberIsQuotedShortened() {
        let digits = String(repeating: "9", count: 1_000_000)
        let forty = String(repeating: "9", count: 40)
        #expect(Self.report(#"{"name": "x", "appearance": "# + digits + "}").description
            == "appearance: \(forty)… (1000000 bytes) is out of range; allowed: 0...65535")
        #expect(Self.report(#"{"name": "# + digits + "}").description
            == "name: expected a string, got a number (\(forty)… (1000000 bytes))")
        #expect(Self.report(#"{"name": "x", "appearance": "# + digits + ".5}").description
            == "appearance: expected an integer, got \(forty)… (1000002 bytes)")
        #expect(Self.report(#"{"name": "x", "advertising": {"interval_ms": ["# + digits + #", 100]}}"#).description
            == "advertising.interval_ms[0]: \(forty)… (1000000 bytes) ms is out of range; allowed: 20...10240 ms")
    }

    @Test func longStringValuesAreQuotedShortened() {
        let long = String(repeating: "é", count: 500_000)  // 1,000,000 bytes of UTF-8
        let q = "\"" + String(repeating: "é", count: 40) + "…\" (1000000 bytes)"
        #expect(Self.report(F.oneCharacteristic(#""uuid": ""# + long + #"", "properties": ["read"]"#)).description
            == "services[0].characteristics[0].uuid: \(q) is not a UUID; expected 4 hex digits (\"180D\"), 8 hex digits (\"1234ABCD\") or the 36-character form (\"6e400001-b5a3-f393-e0a9-e50e24dcca9e\")")
        #expect(Self.report(F.oneCharacteristic(#""uuid": "2A37", "properties": [""# + long + #""]"#)).description.hasPrefix(
            "services[0].characteristics[0].properties[0]: \(q) is not a characteristic property; expected one of: "))
        #expect(Self.report(Self.services(1) { _ in #"{"id": ""# + long + #"", "uuid": "180D"}"# }).description
            == "services[0].id: \(q) is not a valid id: 'é' is not allowed; use letters, digits, '_', '-' and '.'")
        let id = String(repeating: "a", count: 1_000_000)
        let qa = "\"" + String(repeating: "a", count: 40) + "…\" (1000000 bytes)"
        #expect(Self.report(Self.services(1) { _ in #"{"uuid": "180D", "includes": [""# + id + #""]}"# }).description
            == "services[0].includes[0]: no service with id \(qa)")
        #expect(Self.report(F.oneCharacteristic(#""uuid": "2A37", "properties": ["read"], "value": ""# + id + #"""#)).description
            == #"services[0].characteristics[0].value: expected an object with one of "hex", "utf8" or "base64", got a string; write {"hex": …} or {"utf8": …}"#)
        #expect(Self.report(Self.services(2) { _ in #"{"id": ""# + id + #"", "uuid": "180D"}"# }).description
            == "services[1].id: id \(qa) is already used by services[0]")
    }

    /// Found by the config fuzz target: an empty key gave an error with an empty path.
    @Test func anEmptyKeyHasAPath() {
        #expect(F.errors(#"{"name": "x", "": 1}"#) == [#""": unknown key; allowed keys here: name, appearance, advertising, advertising_sets, connection, security, services, state_restoration, l2cap_channels, eatt, phy"#])
        #expect(F.errors(#"{"name": "x", "services": [{"uuid": "180D", "": 1}]}"#)
            == [#"services[0]."": unknown key; "# + Self.allowedServiceKeys])
    }

    // MARK: - Includes

    /// A 5,000-service include chain that closes on itself: one error whose cycle
    /// shows its ends and a count (it listed every service, and the depth-first
    /// search recursed once per service).
    @Test func aLongIncludeCycleIsShortened() {
        let n = 5000
        let r = Self.report(Self.services(n) { i in #"{"id": "s\#(i)", "uuid": "180D", "includes": ["s\#((i + 1) % n)"]}"# })
        #expect(r.description == "services[4999].includes[0]: include cycle: s0 → s1 → s2 → s3 → … (5000 services) … → s4999 → s0")
        let short = Self.report(Self.services(3) { i in #"{"id": "s\#(i)", "uuid": "180D", "includes": ["s\#((i + 1) % 3)"]}"# })
        #expect(short.description == "services[2].includes[0]: include cycle: s0 → s1 → s2 → s0")
    }

    /// Many services each including many others: every repeated include is found
    /// (with a set, not a scan of the list so far) and the report stays capped.
    @Test func repeatedIncludesOfManyServices() {
        let n = 2000
        let all = (1..<n).map { #""s\#($0)""# }.joined(separator: ", ")
        let r = Self.report(Self.services(n) { i in
            i == 0 ? #"{"id": "s0", "uuid": "180D", "includes": [\#(all), \#(all)]}"# : #"{"id": "s\#(i)", "uuid": "180F"}"#
        })
        #expect(r.totalCount == n - 1)
        #expect(r.errors.first?.description == #"services[0].includes[1999]: "s1" is already included"#)
        #expect(r.lines().last == "… and \(n - 1 - 100) more errors")
    }

    // MARK: - Hints

    @Test func hintsStayBoundedAndStillHelp() {
        #expect(ConfigReader.closest(to: String(repeating: "max_length", count: 200_000), in: ServiceParser.characteristicKeys) == nil)
        #expect(ConfigReader.closest(to: "max_lenght", in: ServiceParser.characteristicKeys) == "max_length")
        #expect(ConfigReader.closest(to: "batt", in: ["battery", "hr"]) == "battery")
        // A hint for the first unknown include names, then none once the budget is spent.
        let n = 3000
        let r = Self.report(Self.services(n) { i in #"{"id": "service\#(i)", "uuid": "180D", "includes": ["servce\#(i)"]}"# })
        #expect(r.totalCount == n)
        #expect(r.errors.first?.description == #"services[0].includes[0]: no service with id "servce0"; did you mean "service0"?"#)
        #expect(ConfigReader.shortened("short") == "short" && ConfigReader.quoted("short") == "\"short\"")
    }
}
