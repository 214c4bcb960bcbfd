/// Preferred connection parameters that break a `ConnectionParameterRule`.
public struct ConnectionParameterError: Error, Sendable, Hashable, CustomStringConvertible {
    public var rule: ConnectionParameterRule
    /// The offending values, e.g. "interval [20, 30] ms".
    public var detail: String

    public var field: String { rule.field }
    public var description: String { "\(rule.field): \(detail) breaks the rule \"\(rule)\"" }
}

extension PreferredConnectionParameters {
    /// Every rule these parameters break, Core Specification rules first, each once.
    public func violations() -> [ConnectionParameterError] {
        var out: [ConnectionParameterError] = []
        let lo = intervalMinMs, hi = intervalMaxMs
        let latency = Double(self.latency), timeout = Double(timeoutMs)
        let intervalText = "interval [\(Self.format(lo)), \(Self.format(hi))] ms"
        func add(_ rule: ConnectionParameterRule, _ detail: String) { out.append(ConnectionParameterError(rule: rule, detail: detail)) }

        let finite = lo.isFinite && hi.isFinite
        if !finite || lo < 7.5 || hi > 4000 || lo > hi || !Self.isMultiple(lo, of: 1.25) || !Self.isMultiple(hi, of: 1.25) {
            add(.intervalRange, intervalText)
        }
        if self.latency > 499 { add(.latencyRange, "latency \(self.latency)") }
        if timeoutMs < 100 || timeoutMs > 32000 || timeoutMs % 10 != 0 { add(.timeoutRange, "timeout \(timeoutMs) ms") }

        guard finite else { return out }
        if lo < 15 { add(.appleIntervalMinAtLeast15ms, intervalText) }
        if !Self.isMultiple(lo, of: 15) { add(.appleIntervalMinMultipleOf15ms, intervalText) }
        if !(lo + 15 <= hi || (lo == 15 && hi == 15)) { add(.appleIntervalMaxAtLeastMinPlus15ms, intervalText) }
        if self.latency > 30 { add(.appleLatencyAtMost30, "latency \(self.latency)") }
        if timeoutMs < 2000 || timeoutMs > 6000 { add(.appleTimeoutBetween2And6s, "timeout \(timeoutMs) ms") }
        let effective = hi * (latency + 1)
        if effective > 2000 {
            add(.appleIntervalTimesLatencyAtMost2s, "interval max \(Self.format(hi)) ms × (latency \(self.latency) + 1) = \(Self.format(effective)) ms")
        }
        if !(effective * 3 < timeout) {
            add(
                .appleTimeoutAboveThreeEffectiveIntervals,
                "interval max \(Self.format(hi)) ms × (latency \(self.latency) + 1) × 3 = \(Self.format(effective * 3)) ms against timeout \(timeoutMs) ms")
        }
        return out
    }

    /// Throws the first broken rule (see `violations()`).
    public func validate() throws(ConnectionParameterError) {
        if let first = violations().first { throw first }
    }

    /// The parameters in signalling / HCI units (interval 1.25 ms rounded to nearest,
    /// timeout 10 ms rounded to nearest), clamped to the 16-bit fields.
    public var connectionParameters: LEConnectionParameters {
        func units(_ v: Double, _ unit: Double) -> UInt16 {
            guard v.isFinite else { return 0 }
            return UInt16(min(max((v / unit).rounded(), 0), Double(UInt16.max)))
        }
        return LEConnectionParameters(
            intervalMin: units(intervalMinMs, 1.25), intervalMax: units(intervalMaxMs, 1.25), latency: latency,
            supervisionTimeout: units(Double(timeoutMs), 10))
    }

    private static func isMultiple(_ v: Double, of step: Double) -> Bool {
        let q = v / step
        return abs(q - q.rounded()) < 1e-6
    }

    private static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }
}
