/// A rule that preferred connection parameters can break: the Core Specification's
/// ranges and units (Vol 4 Part E §7.8.12; Vol 3 Part A §4.20) and the "Connection
/// Parameters" rules of Apple's Accessory Design Guidelines for Apple Devices
/// (Bluetooth LE section; R15 and later — an Apple central may reject a
/// Connection Parameter Update Request that breaks any of them).
public enum ConnectionParameterRule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Core: interval 7.5 ms ... 4 s in steps of 1.25 ms, min ≤ max.
    case intervalRange
    /// Core: latency 0 ... 499.
    case latencyRange
    /// Core: supervision timeout 100 ms ... 32 s in steps of 10 ms.
    case timeoutRange
    /// Apple: Interval Min ≥ 15 ms.
    case appleIntervalMinAtLeast15ms
    /// Apple: Interval Min is a multiple of 15 ms.
    case appleIntervalMinMultipleOf15ms
    /// Apple: Interval Min + 15 ms ≤ Interval Max, or Interval Min == Interval Max == 15 ms.
    case appleIntervalMaxAtLeastMinPlus15ms
    /// Apple: Peripheral Latency ≤ 30.
    case appleLatencyAtMost30
    /// Apple: 2 s ≤ connSupervisionTimeout ≤ 6 s.
    case appleTimeoutBetween2And6s
    /// Apple: Interval Max × (Peripheral Latency + 1) ≤ 2 s.
    case appleIntervalTimesLatencyAtMost2s
    /// Apple: Interval Max × (Peripheral Latency + 1) × 3 < connSupervisionTimeout.
    case appleTimeoutAboveThreeEffectiveIntervals

    /// The rule, as the guideline states it.
    public var description: String {
        switch self {
        case .intervalRange: "the connection interval must be 7.5 ms ... 4000 ms in steps of 1.25 ms, minimum ≤ maximum"
        case .latencyRange: "the peripheral latency must be 0 ... 499"
        case .timeoutRange: "the supervision timeout must be 100 ms ... 32000 ms in steps of 10 ms"
        case .appleIntervalMinAtLeast15ms: "Apple: Interval Min ≥ 15 ms"
        case .appleIntervalMinMultipleOf15ms: "Apple: Interval Min modulo 15 ms == 0"
        case .appleIntervalMaxAtLeastMinPlus15ms: "Apple: Interval Min + 15 ms ≤ Interval Max, or Interval Min == Interval Max == 15 ms"
        case .appleLatencyAtMost30: "Apple: Peripheral Latency ≤ 30"
        case .appleTimeoutBetween2And6s: "Apple: 2 seconds ≤ connSupervisionTimeout ≤ 6 seconds"
        case .appleIntervalTimesLatencyAtMost2s: "Apple: Interval Max × (Peripheral Latency + 1) ≤ 2 seconds"
        case .appleTimeoutAboveThreeEffectiveIntervals: "Apple: Interval Max × (Peripheral Latency + 1) × 3 < connSupervisionTimeout"
        }
    }

    /// The config field the rule is about (JSON path).
    public var field: String {
        switch self {
        case .intervalRange, .appleIntervalMinAtLeast15ms, .appleIntervalMinMultipleOf15ms, .appleIntervalMaxAtLeastMinPlus15ms:
            "connection.preferred.interval_ms"
        case .latencyRange, .appleLatencyAtMost30, .appleIntervalTimesLatencyAtMost2s:
            "connection.preferred.latency"
        case .timeoutRange, .appleTimeoutBetween2And6s, .appleTimeoutAboveThreeEffectiveIntervals:
            "connection.preferred.timeout_ms"
        }
    }

    /// True for the Apple guideline rules (as opposed to Core Specification limits).
    public var isAppleGuideline: Bool { rawValue.hasPrefix("apple") }
}
