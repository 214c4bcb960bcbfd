import GattCore

/// The answer to one request: `{"ok":true,...}` or
/// `{"ok":false,"error":CODE,"message":TEXT}`, with the request's `id` last.
public enum ControlReply: Sendable, Equatable {
    /// `{"ok":true}`: set, watch, respond, advertise, disconnect (and a notify reply without `sent`).
    case success
    /// `notify`: `{"ok":true,"sent":N}`, the PDUs queued.
    case sent(Int)
    /// `get`: `{"ok":true,"value":{"hex":...}}`.
    case value(ControlValue)
    /// `status`: `{"ok":true,"advertising":...,"address":...,"connections":[...]}`.
    case status(ControlStatus)
    /// `bonds`: `{"ok":true,"bonds":[...]}`, oldest first.
    case bonds([ControlBond])
    /// `list_services` (every service) and `add_service` (the one added):
    /// `{"ok":true,"services":[{"id":…,"uuid":…,"start":…,"end":…,"runtime":…}]}`.
    case services([ControlService])
    /// `capture` started: `{"ok":true,"file":PATH,"records":TEXT}` (what the transport records).
    case capturing(file: String, records: String)
    /// `l2cap_listen` and `publish_l2cap_channel`: `{"ok":true,"channel":{…}}`.
    case l2capChannel(ControlL2CAPChannel)
    /// `list_l2cap_channels`: `{"ok":true,"channels":[…]}`.
    case l2capChannels([ControlL2CAPChannel])
    case failure(ControlError)

    public func json(id: JSONText?) -> JSONText {
        var members: [(String, JSONText)]
        switch self {
        case .success: members = [("ok", .bool(true))]
        case .sent(let n): members = [("ok", .bool(true)), ("sent", .int(n))]
        case .value(let v): members = [("ok", .bool(true)), ("value", v.json)]
        case .status(let s): members = [("ok", .bool(true))] + s.fields
        case .bonds(let b): members = [("ok", .bool(true)), ("bonds", .array(b.map(\.json)))]
        case .services(let list): members = [("ok", .bool(true)), ("services", .array(list.map(\.json)))]
        case .capturing(let file, let records): members = [("ok", .bool(true)), ("file", .string(file)), ("records", .string(records))]
        case .l2capChannel(let c): members = [("ok", .bool(true)), ("channel", c.json)]
        case .l2capChannels(let list): members = [("ok", .bool(true)), ("channels", .array(list.map(\.json)))]
        case .failure(let e):
            members = [("ok", .bool(false)), ("error", .string(e.code.rawValue)), ("message", .string(e.message))]
        }
        if let id { members.append(("id", id)) }
        return .object(members)
    }

    /// The line to send (without the newline).
    public func text(id: JSONText?) -> String { json(id: id).text }

    /// Decodes the members of a reply to `op` (an unknown `op` reads as `success`).
    static func decode(_ o: ControlObjectReader, op: String) throws(ControlError) -> ControlReply {
        guard try o.bool("ok") else {
            let code = try o.string("error")
            guard let c = ControlErrorCode(rawValue: code) else {
                throw ControlError(.invalidValue, "\(o.path("error")) must be an error code such as \"busy\", got \"\(code)\"")
            }
            return .failure(ControlError(c, try o.string("message")))
        }
        switch op {
        case "notify" where o.has("sent"): return .sent(try o.count("sent"))
        case "get": return .value(try o.value("value"))
        case "status": return .status(try ControlStatus(o))
        case "bonds":
            var bonds: [ControlBond] = []
            for b in try o.objects("bonds") { bonds.append(try ControlBond(b)) }
            return .bonds(bonds)
        case "list_services", "add_service":
            var list: [ControlService] = []
            for s in try o.objects("services") { list.append(try ControlService(s)) }
            return .services(list)
        case "capture" where o.has("records"): return .capturing(file: try o.string("file"), records: try o.string("records"))
        case "l2cap_listen", "publish_l2cap_channel": return .l2capChannel(try ControlL2CAPChannel(try o.object("channel")))
        case "list_l2cap_channels":
            var list: [ControlL2CAPChannel] = []
            for c in try o.objects("channels") { list.append(try ControlL2CAPChannel(c)) }
            return .l2capChannels(list)
        default: return .success
        }
    }
}
