import GattCore

/// A link's parameters on the control socket, in `status.connections[]` and the `link`
/// event: `interval_ms`, `latency`, `timeout_ms`, `tx_phy`, `rx_phy` (`"1m"`, `"2m"`,
/// `"coded"`), `tx_octets`, `rx_octets`; `null` where the transport cannot know the value.
extension LinkParameters {
    static let controlKeys = ["interval_ms", "latency", "timeout_ms", "tx_phy", "rx_phy", "tx_octets", "rx_octets"]

    var controlFields: [(String, JSONText)] {
        func int(_ v: UInt16?) -> JSONText { v.map { .int(Int($0)) } ?? .null }
        func phy(_ v: LEPHY?) -> JSONText { v.map { .string($0.configName) } ?? .null }
        return [
            ("interval_ms", intervalMilliseconds.map { .rawNumber(Self.milliseconds($0)) } ?? .null),
            ("latency", int(peripheralLatency)),
            ("timeout_ms", timeoutMilliseconds.map { .int($0) } ?? .null),
            ("tx_phy", phy(txPHY)), ("rx_phy", phy(rxPHY)),
            ("tx_octets", int(maxTxOctets)), ("rx_octets", int(maxRxOctets)),
        ]
    }

    /// The fields as `controlFields` writes them; an absent member is unknown (an older gattd).
    init(control o: ControlObjectReader) throws(ControlError) {
        func number(_ key: String, scale: Double) throws(ControlError) -> UInt16? {
            guard let v = o.raw(key) else { return nil }
            if case .null = v.kind { return nil }
            guard case .number(let n) = v.kind, let d = Double(n), d >= 0, (d / scale).rounded() <= Double(UInt16.max) else {
                throw ControlError(.invalidValue, "\(o.path(key)) must be a non-negative number or null, got \(v.typeDescription)")
            }
            return UInt16((d / scale).rounded())
        }
        func phy(_ key: String) throws(ControlError) -> LEPHY? {
            guard let v = o.raw(key) else { return nil }
            if case .null = v.kind { return nil }
            return LEPHY(configName: try o.oneOf(key, LEPHY.allCases.map(\.configName)))
        }
        self.init(
            connectionInterval: try number("interval_ms", scale: 1.25), peripheralLatency: try number("latency", scale: 1),
            supervisionTimeout: try number("timeout_ms", scale: 10), txPHY: try phy("tx_phy"), rxPHY: try phy("rx_phy"),
            maxTxOctets: try number("tx_octets", scale: 1), maxRxOctets: try number("rx_octets", scale: 1))
    }
}
