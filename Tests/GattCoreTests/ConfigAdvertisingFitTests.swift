import Testing
@testable import GattCore
import GattTestFixtures

private typealias F = ConfigFixture

/// Checks that only run once the whole config parsed: the 31-byte payload
/// budget of the advertiser and the connection-parameter rules.
@Suite struct ConfigAdvertisingFitTests {
    @Test func advertisingDataThatFitsNowhereIsAConfigError() {
        let json = #"""
            {"name": "X", "advertising": {"scannable": false, "manufacturer_data": [{"company_id": 89,
              "data": {"hex": "00112233445566778899aabbccddeeff00112233445566778899aabbccdd"}}]}}
            """#
        #expect(F.errors(json) == [
            "advertising.manufacturer_data[0]: needs 34 bytes, 28 left in the advertising data (no scan response: the advertisement is not scannable)"
        ])
    }

    @Test func preferredConnectionParametersBreakingAppleRulesNameTheRule() {
        let json = #"{"name": "X", "connection": {"preferred": {"interval_ms": [30, 45], "latency": 31, "timeout_ms": 6000}}}"#
        let errors = F.errors(json)
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("connection.preferred.latency: ") == true)
        #expect(errors.first?.contains("breaks the rule \"Apple: ") == true)
    }

    @Test func validPreferredParametersLoad() throws {
        let c = try F.load(#"{"name": "X", "connection": {"preferred": {"interval_ms": [30, 45], "latency": 0, "timeout_ms": 4000}}}"#)
        #expect(c.advertising.preferredConnection == PreferredConnectionParameters(intervalMinMs: 30, intervalMaxMs: 45, latency: 0, timeoutMs: 4000))
    }
}
