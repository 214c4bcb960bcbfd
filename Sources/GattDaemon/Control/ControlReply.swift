import GattCore

/// The answer to one request: `{"ok":true,...}` or
/// `{"ok":false,"error":CODE,"message":TEXT}`, with the request's `id` last.
public enum ControlReply: Sendable, Equatable {
    case ok([(String, JSONText)])
    case failure(ControlError)

    public static func == (a: ControlReply, b: ControlReply) -> Bool { a.json(id: nil) == b.json(id: nil) }

    public static let success = ControlReply.ok([])

    public func json(id: JSONText?) -> JSONText {
        var members: [(String, JSONText)]
        switch self {
        case .ok(let fields):
            members = [("ok", .bool(true))] + fields
        case .failure(let e):
            members = [("ok", .bool(false)), ("error", .string(e.code.rawValue)), ("message", .string(e.message))]
        }
        if let id { members.append(("id", id)) }
        return .object(members)
    }

    /// The line to send (without the newline).
    public func text(id: JSONText?) -> String { json(id: id).text }
}

/// Something that happened, sent to watching clients as `{"event":NAME,"central":ADDR,...}`.
/// Characteristics are named by config id (else UUID), centrals by address.
public enum ControlEvent: Sendable, Equatable {
    case connected(central: String)
    case disconnected(central: String, reason: String)
    case mtu(central: String, mtu: Int)
    /// `subscribed` when either bit is set, else `unsubscribed`.
    case subscription(central: String, characteristic: String, notify: Bool, indicate: Bool)
    /// A central wrote a value (also a Write Command to a control characteristic).
    case written(central: String, characteristic: String, value: [UInt8])
    case readRequest(central: String, request: UInt64, characteristic: String, offset: Int)
    case writeRequest(central: String, request: UInt64, characteristic: String, offset: Int, value: [UInt8])
    /// Every transmit queue that made `notify` answer `busy` has room again.
    case ready
    /// A central confirmed an indication.
    case confirmed(central: String, characteristic: String)
    /// A value of a persisted characteristic could not be made durable (`central`: the
    /// central that wrote it; nil for a control-socket `set`/`notify`).
    case persistFailed(central: String?, characteristic: String, message: String)

    public var json: JSONText {
        switch self {
        case .connected(let c):
            return .object([("event", .string("connected")), ("central", .string(c))])
        case .disconnected(let c, let reason):
            return .object([("event", .string("disconnected")), ("central", .string(c)), ("reason", .string(reason))])
        case .mtu(let c, let mtu):
            return .object([("event", .string("mtu")), ("central", .string(c)), ("mtu", .int(mtu))])
        case .subscription(let c, let ch, let n, let i):
            return .object([
                ("event", .string(n || i ? "subscribed" : "unsubscribed")), ("central", .string(c)),
                ("characteristic", .string(ch)), ("notify", .bool(n)), ("indicate", .bool(i)),
            ])
        case .written(let c, let ch, let v):
            return .object([("event", .string("written")), ("central", .string(c)), ("characteristic", .string(ch)), ("value", .hexValue(v))])
        case .readRequest(let c, let r, let ch, let offset):
            return .object([
                ("event", .string("read_request")), ("central", .string(c)), ("request", .int(Int(truncatingIfNeeded: r))),
                ("characteristic", .string(ch)), ("offset", .int(offset)),
            ])
        case .writeRequest(let c, let r, let ch, let offset, let v):
            return .object([
                ("event", .string("write_request")), ("central", .string(c)), ("request", .int(Int(truncatingIfNeeded: r))),
                ("characteristic", .string(ch)), ("offset", .int(offset)), ("value", .hexValue(v)),
            ])
        case .ready:
            return .object([("event", .string("ready"))])
        case .confirmed(let c, let ch):
            return .object([("event", .string("confirmed")), ("central", .string(c)), ("characteristic", .string(ch))])
        case .persistFailed(let c, let ch, let message):
            return .object(
                [("event", .string("persist_failed"))] + (c.map { [("central", JSONText.string($0))] } ?? [])
                    + [("characteristic", .string(ch)), ("message", .string(message))])
        }
    }

    public var text: String { json.text }

    /// The control event for an ATT server event, or nil when it is not forwarded
    /// (descriptor writes, client features, timeouts, indication timeouts).
    /// `central` maps a connection to its address string.
    public static func from(_ e: ATTServerEvent, database db: GATTDatabase, central: (ConnectionID) -> String?) -> ControlEvent? {
        func name(_ c: Int) -> String { db.characteristics.indices.contains(c) ? db.characteristics[c].displayName : "#\(c)" }
        switch e {
        case .mtuExchanged(let id, let mtu):
            return central(id).map { .mtu(central: $0, mtu: mtu) }
        case .subscriptionChanged(let id, let c, let n, let i):
            return central(id).map { .subscription(central: $0, characteristic: name(c), notify: n, indicate: i) }
        case .written(let id, let c, let v), .writeCommand(let id, let c, let v):
            return central(id).map { .written(central: $0, characteristic: name(c), value: v) }
        case .readRequest(let r, let id, let c, let offset):
            return central(id).map { .readRequest(central: $0, request: r.rawValue, characteristic: name(c), offset: offset) }
        case .writeRequest(let r, let id, let c, let v, let offset):
            return central(id).map { .writeRequest(central: $0, request: r.rawValue, characteristic: name(c), offset: offset, value: v) }
        case .indicationConfirmed(let id, let c):
            return central(id).map { .confirmed(central: $0, characteristic: name(c)) }
        case .ready:
            return .ready
        case .descriptorWritten, .clientFeaturesChanged, .requestTimedOut, .indicationTimedOut, .persistRequest:
            return nil
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
