import GattCore

/// The pairing events watching clients see (`{"event":NAME,"central":ADDR,...}`), from the
/// Security Manager's (Core Spec Vol 3 Part H §2.3.5.1): prompts to answer with
/// `pairing_respond`, a passkey to show, and the result.
public enum ControlPairingEvent: Sendable, Equatable {
    /// `pairing_request`: answer `"accept"`; `method` e.g. "just_works".
    case request(method: String, ioCapability: String)
    /// `passkey_display`: show these six digits; nothing to answer.
    case passkeyDisplay(String)
    /// `numeric_comparison`: answer `"confirm": true` when the central shows the same six digits.
    case numericComparison(String)
    /// `passkey_request`: answer with the `"passkey"` the central displays.
    case passkeyRequest
    /// `paired`: bonded or not, under its `identity` address.
    case paired(identity: String, bonded: Bool, authenticated: Bool, secureConnections: Bool, keySize: Int)
    /// `pairing_failed`: the reason (snake_case SMP reason), and whether the central ended it.
    case failed(reason: String, byCentral: Bool)
    /// `pairing_timeout`: the 30 s SMP timer expired.
    case timedOut

    public static let names = [
        "pairing_request", "passkey_display", "numeric_comparison", "passkey_request", "paired", "pairing_failed", "pairing_timeout",
    ]

    public var name: String {
        switch self {
        case .request: "pairing_request"
        case .passkeyDisplay: "passkey_display"
        case .numericComparison: "numeric_comparison"
        case .passkeyRequest: "passkey_request"
        case .paired: "paired"
        case .failed: "pairing_failed"
        case .timedOut: "pairing_timeout"
        }
    }

    /// The members after `event` and `central`.
    var fields: [(String, JSONText)] {
        switch self {
        case .request(let method, let io): [("method", .string(method)), ("io_capability", .string(io))]
        case .passkeyDisplay(let p): [("passkey", .string(p))]
        case .numericComparison(let v): [("value", .string(v))]
        case .passkeyRequest, .timedOut: []
        case .paired(let identity, let bonded, let authenticated, let sc, let keySize):
            [
                ("identity", .string(identity)), ("bonded", .bool(bonded)), ("authenticated", .bool(authenticated)),
                ("secure_connections", .bool(sc)), ("key_size", .int(keySize)),
            ]
        case .failed(let reason, let byCentral): [("reason", .string(reason)), ("by_central", .bool(byCentral))]
        }
    }

    static func decode(_ name: String, _ o: ControlObjectReader) throws(ControlError) -> ControlPairingEvent {
        switch name {
        case "pairing_request": return .request(method: try o.string("method"), ioCapability: try o.string("io_capability"))
        case "passkey_display": return .passkeyDisplay(try o.string("passkey"))
        case "numeric_comparison": return .numericComparison(try o.string("value"))
        case "passkey_request": return .passkeyRequest
        case "paired":
            return .paired(
                identity: try o.string("identity"), bonded: try o.bool("bonded"), authenticated: try o.bool("authenticated"),
                secureConnections: try o.bool("secure_connections"), keySize: try o.count("key_size"))
        case "pairing_failed": return .failed(reason: try o.string("reason"), byCentral: try o.bool("by_central"))
        default: return .timedOut
        }
    }

    /// The control event for a Security Manager event.
    public init(_ e: SecurityManagerEvent) {
        switch e {
        case .pairingRequest(let method, let io): self = .request(method: method.controlName, ioCapability: io.controlName)
        case .displayPasskey(let p): self = .passkeyDisplay(Self.sixDigits(p))
        case .numericComparison(let v): self = .numericComparison(Self.sixDigits(v))
        case .passkeyRequest: self = .passkeyRequest
        case .pairingFailed(let reason, let remote): self = .failed(reason: snakeCase("\(reason)"), byCentral: remote)
        case .timedOut: self = .timedOut
        case .pairingComplete(let b, let bonded):
            self = .paired(
                identity: b.address.description, bonded: bonded, authenticated: b.authenticated,
                secureConnections: b.secureConnections, keySize: b.keySize)
        }
    }

    /// A passkey or comparison value as the six digits a person compares (leading zeros kept).
    public static func sixDigits(_ v: UInt32) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, 6 - s.count)) + s
    }
}
