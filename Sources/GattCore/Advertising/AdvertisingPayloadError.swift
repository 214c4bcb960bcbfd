/// A configuration that cannot be advertised. `field` is the JSON path of the
/// config entry at fault (e.g. `advertising.manufacturer_data[0]`).
public enum AdvertisingPayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An AD structure fits neither in the advertising data nor in the scan response.
    /// `scanResponseLeft` is nil when the advertisement is not scannable.
    case doesNotFit(field: String, needed: Int, advertisingDataLeft: Int, scanResponseLeft: Int?)
    /// A value out of range (e.g. the advertising interval).
    case invalidValue(field: String, reason: String)
    /// A set with extended PDUs where only legacy advertising is available (`AdvertisingLimits`).
    case extendedNotSupported(field: String)
    /// More sets than can be on the air at once: the set at `field` is number `set` of
    /// `configured` (the primary is number 1); `supported` fit.
    case tooManySets(field: String, set: Int, configured: Int, supported: Int)
    /// A payload (`payload`: "advertising data" or "scan response") longer than the
    /// controller takes per set.
    case exceedsControllerLimit(field: String, payload: String, length: Int, maximum: Int)

    public var field: String {
        switch self {
        case .doesNotFit(let f, _, _, _), .invalidValue(let f, _), .extendedNotSupported(let f), .tooManySets(let f, _, _, _),
            .exceedsControllerLimit(let f, _, _, _):
            f
        }
    }

    public var description: String {
        switch self {
        case .doesNotFit(let field, let needed, let adv, let sr):
            let srText = sr.map { " and \($0) in the scan response" } ?? " (no scan response: the advertisement is not scannable)"
            return "\(field): needs \(needed) bytes, \(adv) left in the advertising data\(srText)"
        case .invalidValue(let field, let reason):
            return "\(field): \(reason)"
        case .extendedNotSupported(let field):
            return "\(field): extended advertising PDUs need LE Extended Advertising, and this controller has legacy advertising only; "
                + "set \"extended\": false (the set must then fit 31 bytes of advertising data and 31 of scan response)"
        case .tooManySets(let field, let set, let configured, let supported):
            return "\(field): the controller has \(supported) advertising set\(supported == 1 ? "" : "s"); this is set \(set) of \(configured) "
                + "(the primary set \"advertising\" is set 1)"
        case .exceedsControllerLimit(let field, let payload, let length, let maximum):
            return "\(field): the \(payload) is \(length) bytes; the controller takes at most \(maximum) bytes per set"
        }
    }
}
