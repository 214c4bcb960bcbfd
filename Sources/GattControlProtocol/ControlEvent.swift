import GattCore

/// Something that happened, sent to watching clients as `{"event":NAME,"central":ADDR,...}`.
/// Characteristics are named by config id (else UUID), centrals by address.
public enum ControlEvent: Sendable, Equatable {
    /// `identity`: the bonded central's identity address when `central` is a private
    /// address its IRK resolves.
    case connected(central: String, identity: String? = nil)
    case disconnected(central: String, reason: String)
    case mtu(central: String, mtu: Int)
    /// `subscribed` when either bit is set, else `unsubscribed`.
    case subscription(central: String, characteristic: String, notify: Bool, indicate: Bool)
    /// A central wrote a value (also a Write Command to a control characteristic).
    case written(central: String, characteristic: String, value: ControlValue)
    case readRequest(central: String, request: UInt64, characteristic: String, offset: Int)
    case writeRequest(central: String, request: UInt64, characteristic: String, offset: Int, value: ControlValue)
    /// Every transmit queue that made `notify` answer `busy` has room again.
    case ready
    /// A central confirmed an indication.
    case confirmed(central: String, characteristic: String)
    /// An indication sent to a central will never be confirmed (no `confirmed` follows):
    /// `reason` is `bearer_closed` (the central closed the Enhanced ATT bearer it went on) or
    /// `timeout` (not confirmed in 30 s; its bearer is closed).
    case unconfirmed(central: String, characteristic: String, reason: String)
    /// A value of a persisted characteristic could not be made durable (`central`: the
    /// central that wrote it; nil for a control-socket `set`/`notify`).
    case persistFailed(central: String?, characteristic: String, message: String)
    /// Pairing: a prompt (answer with `pairing_respond`), a passkey to show, the result.
    case pairing(central: String, ControlPairingEvent)
    /// The controller became usable or stopped being usable; `reason` says why when it is not
    /// `powered_on`.
    case state(ControlControllerState, reason: String?)
    /// An advertising set (`"primary"`: the config's `advertising`) started, stopped or failed to start.
    case advertising(set: String, ControlAdvertisingChange, reason: String?)
    /// A central opened the app channel `channel`; sent only to the client that listens for it
    /// and gets the socket, attached (SCM_RIGHTS) to this line's first byte.
    case l2capChannel(channel: String, psm: UInt16, central: String, mtu: Int, peerMTU: Int)
    /// A central's link parameters, PHYs or data length changed (`ControlLink`: null where unknown).
    case link(central: String, LinkParameters)
    /// A client sent `{"op":"signal","name":NAME}`.
    case signal(name: String)

    /// The `"event"` member.
    public var name: String {
        switch self {
        case .connected: "connected"
        case .disconnected: "disconnected"
        case .mtu: "mtu"
        case .subscription(_, _, let n, let i): n || i ? "subscribed" : "unsubscribed"
        case .written: "written"
        case .readRequest: "read_request"
        case .writeRequest: "write_request"
        case .ready: "ready"
        case .confirmed: "confirmed"
        case .unconfirmed: "unconfirmed"
        case .persistFailed: "persist_failed"
        case .pairing(_, let e): e.name
        case .state: "state"
        case .advertising: "advertising"
        case .l2capChannel: "l2cap_channel"
        case .link: "link"
        case .signal: "signal"
        }
    }

    public var json: JSONText {
        var m: [(String, JSONText)] = [("event", .string(name))]
        switch self {
        case .connected(let c, let identity):
            m.append(("central", .string(c)))
            if let identity { m.append(("identity", .string(identity))) }
        case .disconnected(let c, let reason):
            m += [("central", .string(c)), ("reason", .string(reason))]
        case .mtu(let c, let mtu):
            m += [("central", .string(c)), ("mtu", .int(mtu))]
        case .subscription(let c, let ch, let n, let i):
            m += [("central", .string(c)), ("characteristic", .string(ch)), ("notify", .bool(n)), ("indicate", .bool(i))]
        case .written(let c, let ch, let v):
            m += [("central", .string(c)), ("characteristic", .string(ch)), ("value", v.json)]
        case .readRequest(let c, let r, let ch, let offset):
            m += [("central", .string(c)), ("request", .rawNumber(String(r))), ("characteristic", .string(ch)), ("offset", .int(offset))]
        case .writeRequest(let c, let r, let ch, let offset, let v):
            m += [("central", .string(c)), ("request", .rawNumber(String(r))), ("characteristic", .string(ch)), ("offset", .int(offset)), ("value", v.json)]
        case .ready:
            break
        case .confirmed(let c, let ch):
            m += [("central", .string(c)), ("characteristic", .string(ch))]
        case .unconfirmed(let c, let ch, let reason):
            m += [("central", .string(c)), ("characteristic", .string(ch)), ("reason", .string(reason))]
        case .persistFailed(let c, let ch, let message):
            if let c { m.append(("central", .string(c))) }
            m += [("characteristic", .string(ch)), ("message", .string(message))]
        case .pairing(let c, let e):
            m.append(("central", .string(c)))
            m += e.fields
        case .state(let state, let reason):
            m.append(("state", .string(state.rawValue)))
            if let reason { m.append(("reason", .string(reason))) }
        case .advertising(let set, let change, let reason):
            m += [("set", .string(set)), ("state", .string(change.rawValue))]
            if let reason { m.append(("reason", .string(reason))) }
        case .l2capChannel(let channel, let psm, let central, let mtu, let peerMTU):
            m += [("channel", .string(channel)), ("psm", .int(Int(psm))), ("central", .string(central)), ("mtu", .int(mtu)), ("peer_mtu", .int(peerMTU))]
        case .link(let central, let link):
            m.append(("central", .string(central)))
            m += link.controlFields
        case .signal(let name):
            m.append(("name", .string(name)))
        }
        return .object(m)
    }

    public var text: String { json.text }

    /// The event named by `"event"`; `unknown_op` when this version does not know it.
    static func decode(_ o: ControlObjectReader) throws(ControlError) -> ControlEvent {
        let name = try o.string("event")
        switch name {
        case "connected":
            return .connected(central: try o.string("central"), identity: try o.optionalString("identity"))
        case "disconnected":
            return .disconnected(central: try o.string("central"), reason: try o.string("reason"))
        case "mtu":
            return .mtu(central: try o.string("central"), mtu: try o.count("mtu"))
        case "subscribed", "unsubscribed":
            let e = ControlEvent.subscription(
                central: try o.string("central"), characteristic: try o.string("characteristic"),
                notify: try o.bool("notify"), indicate: try o.bool("indicate"))
            guard e.name == name else {
                throw ControlError(.invalidValue, "\"\(name)\" does not match \(o.path("notify")) and \(o.path("indicate")) (\(e.name))")
            }
            return e
        case "written":
            return .written(central: try o.string("central"), characteristic: try o.string("characteristic"), value: try o.value("value"))
        case "read_request":
            return .readRequest(
                central: try o.string("central"), request: try o.unsigned("request"),
                characteristic: try o.string("characteristic"), offset: try o.count("offset"))
        case "write_request":
            return .writeRequest(
                central: try o.string("central"), request: try o.unsigned("request"),
                characteristic: try o.string("characteristic"), offset: try o.count("offset"), value: try o.value("value"))
        case "ready":
            return .ready
        case "confirmed":
            return .confirmed(central: try o.string("central"), characteristic: try o.string("characteristic"))
        case "unconfirmed":
            return .unconfirmed(central: try o.string("central"), characteristic: try o.string("characteristic"), reason: try o.string("reason"))
        case "persist_failed":
            return .persistFailed(central: try o.optionalString("central"), characteristic: try o.string("characteristic"), message: try o.string("message"))
        case "state":
            let state = try o.oneOf("state", ControlControllerState.allCases.map(\.rawValue))
            return .state(ControlControllerState(rawValue: state) ?? .unknown, reason: try o.optionalString("reason"))
        case "advertising":
            let change = try o.oneOf("state", ControlAdvertisingChange.allCases.map(\.rawValue))
            return .advertising(set: try o.string("set"), ControlAdvertisingChange(rawValue: change) ?? .failed, reason: try o.optionalString("reason"))
        case "l2cap_channel":
            let psm = try o.count("psm")
            guard psm <= 0xFFFF else { throw ControlError(.invalidValue, "\(o.path("psm")) must be at most 65535") }
            return .l2capChannel(
                channel: try o.string("channel"), psm: UInt16(psm), central: try o.string("central"), mtu: try o.count("mtu"),
                peerMTU: try o.count("peer_mtu"))
        case "link":
            return .link(central: try o.string("central"), try LinkParameters(control: o))
        case "signal":
            return .signal(name: try o.string("name"))
        case _ where ControlPairingEvent.names.contains(name):
            return .pairing(central: try o.string("central"), try ControlPairingEvent.decode(name, o))
        default:
            throw ControlError(.unknownOp, "unknown event \"\(name)\"")
        }
    }
}

extension HCIStatus {
    /// snake_case name for the `disconnected` event ("remote_user_terminated_connection").
    public var controlName: String {
        guard let n = name else { return "0x" + String(rawValue, radix: 16) }
        var out = ""
        for ch in n.lowercased() {
            if ch.isLetter || ch.isNumber {
                out.append(ch)
            } else if !out.hasSuffix("_") {
                out.append("_")
            }
        }
        while out.hasSuffix("_") { out.removeLast() }
        return out
    }
}
