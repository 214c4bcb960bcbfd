import GattCore

/// What `connection_parameters` asks for: a named preset, or explicit values checked against
/// the rules of the config's `connection.preferred` (the Core Specification's and Apple's).
public enum ControlConnectionParameters: Sendable, Equatable {
    case preset(ConnectionParameterPreset)
    case explicit(PreferredConnectionParameters)

    public var parameters: PreferredConnectionParameters {
        switch self {
        case .preset(let p): p.parameters
        case .explicit(let p): p
        }
    }

    var jsonMembers: [(String, JSONText)] {
        switch self {
        case .preset(let p):
            return [("preset", .string(p.rawValue))]
        case .explicit(let p):
            return [
                ("interval_ms", .array([.rawNumber(LinkParameters.milliseconds(p.intervalMinMs)), .rawNumber(LinkParameters.milliseconds(p.intervalMaxMs))])),
                ("latency", .int(Int(p.latency))), ("timeout_ms", .int(p.timeoutMs)),
            ]
        }
    }

    /// `"preset"`, or all of `"interval_ms"` ([min, max]), `"latency"` and `"timeout_ms"`;
    /// values that break a rule are `invalid_value`, naming the rule, before anything is sent.
    static func decode(_ o: ControlObjectReader) throws(ControlError) -> ControlConnectionParameters {
        let explicitKeys = ["interval_ms", "latency", "timeout_ms"]
        if o.has("preset") {
            if let k = explicitKeys.first(where: o.has) {
                throw ControlError(.invalidValue, "\"preset\" names the parameters: leave out \(o.path(k))")
            }
            let name = try o.oneOf("preset", ConnectionParameterPreset.allCases.map(\.rawValue))
            return .preset(ConnectionParameterPreset(rawValue: name) ?? .balanced)
        }
        guard explicitKeys.contains(where: o.has) else {
            throw ControlError(.missingField, "missing \"preset\" (\(ConnectionParameterPreset.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))) or \"interval_ms\", \"latency\" and \"timeout_ms\"")
        }
        let interval = try o.field("interval_ms")
        guard case .array(let bounds) = interval.kind, bounds.count == 2,
            case .number(let lo) = bounds[0].kind, case .number(let hi) = bounds[1].kind, let min = Double(lo), let max = Double(hi)
        else {
            throw ControlError(.invalidValue, "\(o.path("interval_ms")) must be [min, max] in milliseconds, got \(interval.typeDescription)")
        }
        let latency = try o.count("latency")
        let timeout = try o.count("timeout_ms")
        guard latency <= Int(UInt16.max), timeout <= 1_000_000 else {
            throw ControlError(.invalidValue, "\(o.path(latency > Int(UInt16.max) ? "latency" : "timeout_ms")) is out of range")
        }
        let p = PreferredConnectionParameters(intervalMinMs: min, intervalMaxMs: max, latency: UInt16(latency), timeoutMs: timeout)
        if let broken = p.violations().first {
            let key = broken.field.split(separator: ".").last.map(String.init) ?? "interval_ms"
            throw ControlError(.invalidValue, "\(o.path(key)): \(broken.detail) breaks the rule \"\(broken.rule)\"; nothing was sent")
        }
        return .explicit(p)
    }
}
