import GattCore

/// What a control client asks for (one line of the protocol).
public enum ControlCommand: Sendable, Equatable {
    /// Set a value and notify/indicate subscribers (`central`: only that one).
    /// `wait`: when a subscriber's transmit queue is full, wait for room (the connection's later
    /// requests wait behind it) instead of answering `busy`.
    case notify(characteristic: String, value: ControlValue, central: String?, wait: Bool = false)
    /// `notify` naming several values (`"values":[{"characteristic":ID,"value":V},...]`): all
    /// set and sent at once, in one Multiple Handle Value Notification to a client that
    /// supports it (Vol 3 Part F §3.4.7.4), else one PDU per value. All or nothing.
    case notifyValues(values: [ControlNotifyValue], central: String?, wait: Bool = false)
    /// Set a value without notifying.
    case set(characteristic: String, value: ControlValue)
    case get(characteristic: String)
    case status
    /// Turn the connection into an event stream. Watching is passive; `requests: true` also
    /// makes this client a responder for `"handler": "control"` characteristics (`false`
    /// stops that; nil, the member left out, leaves it as it was).
    case watch(requests: Bool?)
    /// Answer a forwarded read/write request (a success without `"value"` is the empty value).
    case respond(request: UInt64, result: Result<ControlValue, ATTError>)
    /// Advertising on or off, for one set (`set` nil: the primary set, the config's `advertising`).
    case advertise(enable: Bool, set: String? = nil)
    /// Replace a set's manufacturer or service data while it runs (`set` nil: the primary set):
    /// `{"op":"advertising_data","set":ID,"manufacturer_data":[...],"service_data":[...]}`, each
    /// member as in the config; an absent one stays, an empty array removes the field.
    case advertisingData(set: String?, update: AdvertisingDataUpdate)
    case disconnect(central: String)
    /// Answer a pairing prompt (`central` nil: the only prompt waiting).
    case pairingRespond(central: String?, answer: ControlPairingAnswer)
    /// List the bonds.
    case bonds
    /// Forget a bond (and disconnect the central).
    case unbond(central: String)
    /// Add a service at runtime: `service` is a service object as in the config's `services`.
    case addService(service: JSONValue)
    /// Remove a service by its config id.
    case removeService(id: String)
    case listServices
    /// Start a btsnoop capture into a new file (nil: stop it): `{"op":"capture","file":PATH}`,
    /// `{"op":"capture","stop":true}`.
    case capture(file: String?)
    /// `l2cap_listen`: hand this client every channel centrals open to the app channel `channel`
    /// (an `l2cap_channel` event with the socket attached).
    case l2capListen(channel: String)
    case l2capUnlisten(channel: String)
    case listL2CAPChannels
    /// `publish_l2cap_channel`: a channel object as in the config's `l2cap_channels`.
    case publishL2CAPChannel(channel: JSONValue)
    case unpublishL2CAPChannel(id: String)
    /// New connection parameters for one central (`central`) or every connected one (nil).
    case connectionParameters(central: String?, ControlConnectionParameters)
    /// Preferred PHYs for one central (LE Set PHY): `tx` and `rx`, with the LE Coded coding.
    case phy(central: String, tx: LEPHY, rx: LEPHY, coding: LECodedPHYCoding)
    /// The largest LL Data PDU payload to send to one central (27...251 octets, LE Set Data Length).
    case dataLength(central: String, txOctets: Int)
    /// `signal`: passes `name` to every watching client as a `signal` event (programs on the
    /// socket telling each other something, e.g. `gattctl improv authorize` for a button).
    case signal(name: String)

    /// The `"op"` member.
    public var op: String {
        switch self {
        case .notify, .notifyValues: "notify"
        case .set: "set"
        case .get: "get"
        case .status: "status"
        case .watch: "watch"
        case .respond: "respond"
        case .advertise: "advertise"
        case .advertisingData: "advertising_data"
        case .disconnect: "disconnect"
        case .pairingRespond: "pairing_respond"
        case .bonds: "bonds"
        case .unbond: "unbond"
        case .addService: "add_service"
        case .removeService: "remove_service"
        case .listServices: "list_services"
        case .capture: "capture"
        case .l2capListen: "l2cap_listen"
        case .l2capUnlisten: "l2cap_unlisten"
        case .listL2CAPChannels: "list_l2cap_channels"
        case .publishL2CAPChannel: "publish_l2cap_channel"
        case .unpublishL2CAPChannel: "unpublish_l2cap_channel"
        case .connectionParameters: "connection_parameters"
        case .phy: "phy"
        case .dataLength: "data_length"
        case .signal: "signal"
        }
    }
}

extension ControlCommand {
    /// A `notify` with `"wait": true`: a full queue holds it (and the client's later requests)
    /// until there is room, instead of answering `busy`.
    public var waitsForRoom: Bool {
        switch self {
        case .notify(_, _, _, let wait), .notifyValues(_, _, let wait): wait
        default: false
        }
    }
}

/// One value of a `notify` naming several (`"values"`).
public struct ControlNotifyValue: Sendable, Equatable {
    public var characteristic: String
    public var value: ControlValue
    public init(characteristic: String, value: ControlValue) {
        self.characteristic = characteristic
        self.value = value
    }
}

/// One request line: the command and the client's `id` to echo.
public struct ControlRequest: Sendable, Equatable {
    /// The request's `"id"` (a short string or an integer), echoed in the reply.
    public var id: JSONText?
    public var command: ControlCommand
    public init(id: JSONText? = nil, command: ControlCommand) {
        self.id = id
        self.command = command
    }
}

// MARK: - Encoding

extension ControlRequest {
    /// `{"op":...,<the op's members>,"id":...}`: `op` first, `id` last.
    public var json: JSONText {
        var m: [(String, JSONText)] = [("op", .string(command.op))]
        switch command {
        case .notify(let c, let v, let central, let wait):
            m += [("characteristic", .string(c)), ("value", v.json)]
            if let central { m.append(("central", .string(central))) }
            if wait { m.append(("wait", .bool(true))) }
        case .notifyValues(let values, let central, let wait):
            m.append(("values", .array(values.map { .object([("characteristic", .string($0.characteristic)), ("value", $0.value.json)]) })))
            if let central { m.append(("central", .string(central))) }
            if wait { m.append(("wait", .bool(true))) }
        case .set(let c, let v):
            m += [("characteristic", .string(c)), ("value", v.json)]
        case .get(let c):
            m.append(("characteristic", .string(c)))
        case .status, .bonds:
            break
        case .watch(let requests):
            if let requests { m.append(("requests", .bool(requests))) }
        case .respond(let r, .success(let v)):
            m += [("request", .rawNumber(String(r))), ("status", .string("success")), ("value", v.json)]
        case .respond(let r, .failure(let e)):
            m += [("request", .rawNumber(String(r))), ("status", .string(e.name))]
        case .advertise(let enable, let set):
            m.append(("enable", .bool(enable)))
            if let set { m.append(("set", .string(set))) }
        case .advertisingData(let set, let update):
            if let set { m.append(("set", .string(set))) }
            m += update.jsonMembers
        case .disconnect(let central), .unbond(let central):
            m.append(("central", .string(central)))
        case .pairingRespond(let central, let answer):
            if let central { m.append(("central", .string(central))) }
            m += answer.fields
        case .addService(let service):
            m.append(("service", JSONText(service)))
        case .removeService(let id):
            m.append(("service", .string(id)))
        case .listServices:
            break
        case .capture(let file?):
            m.append(("file", .string(file)))
        case .capture(nil):
            m.append(("stop", .bool(true)))
        case .l2capListen(let channel), .l2capUnlisten(let channel), .unpublishL2CAPChannel(let channel):
            m.append(("channel", .string(channel)))
        case .listL2CAPChannels:
            break
        case .publishL2CAPChannel(let channel):
            m.append(("channel", JSONText(channel)))
        case .connectionParameters(let central, let parameters):
            if let central { m.append(("central", .string(central))) }
            m += parameters.jsonMembers
        case .phy(let central, let tx, let rx, let coding):
            m.append(("central", .string(central)))
            m += [("tx", .string(ControlPHY.name(tx, coding))), ("rx", .string(ControlPHY.name(rx, coding)))]
        case .dataLength(let central, let octets):
            m += [("central", .string(central)), ("tx_octets", .int(octets))]
        case .signal(let name):
            m.append(("name", .string(name)))
        }
        if let id { m.append(("id", id)) }
        return .object(m)
    }

    /// The line to send (without the newline).
    public var text: String { json.text }
}

// MARK: - Decoding

extension ControlRequest {
    /// Longest request line accepted (without its newline).
    public static let maximumLineLength = 64 * 1024
    /// Longest string `id` echoed.
    public static let maximumIDLength = 64

    /// Decodes one line (without the newline) of newline-delimited JSON.
    /// Unknown members are ignored so newer clients can add optional fields.
    public static func decode(_ line: [UInt8]) throws(ControlRequestError) -> ControlRequest {
        let o: ControlObjectReader
        do {
            o = try readObjectLine(line, what: "a request")
        } catch {
            throw ControlRequestError(id: nil, error: error)
        }
        let id = try o.raw("id").map { v throws(ControlRequestError) in try requestID(v) }
        do {
            try o.rejectDuplicates()
            return ControlRequest(id: id, command: try command(o))
        } catch {
            throw ControlRequestError(id: id, error: error)
        }
    }

    /// An `id` is echoed only when it is a short string or an integer within Int64's range;
    /// anything else is rejected (not echoed).
    private static func requestID(_ v: JSONValue) throws(ControlRequestError) -> JSONText {
        let expected = "\"id\" must be a string of at most \(maximumIDLength) characters or an integer from -9223372036854775808 to 9223372036854775807"
        switch v.kind {
        case .string(let s) where s.count <= maximumIDLength:
            return .string(s)
        case .number(let n) where n.count <= 20 && Int64(n) != nil:
            return .rawNumber(n)
        case .string(let s):
            throw ControlRequestError(id: nil, error: ControlError(.invalidValue, "\(expected), got a string of \(s.count) characters"))
        default:
            throw ControlRequestError(id: nil, error: ControlError(.invalidValue, "\(expected), got \(v.shortTypeDescription)"))
        }
    }

    private static func command(_ o: ControlObjectReader) throws(ControlError) -> ControlCommand {
        let op = try o.string("op")
        switch op {
        case "notify" where o.has("values"):
            if o.has("characteristic") || o.has("value") {
                throw ControlError(.invalidValue, "\"values\" names the characteristics and values: leave out \"characteristic\" and \"value\"")
            }
            let values = try o.objects("values")
            guard !values.isEmpty else { throw ControlError(.invalidValue, "\(o.path("values")) must name at least one value") }
            return .notifyValues(
                values: try values.map { v throws(ControlError) in ControlNotifyValue(characteristic: try v.string("characteristic"), value: try v.value("value")) },
                central: try o.optionalString("central"), wait: o.has("wait") ? try o.bool("wait") : false)
        case "notify":
            let characteristic = try o.string("characteristic")
            let value = try o.value("value")
            return .notify(
                characteristic: characteristic, value: value, central: try o.optionalString("central"),
                wait: o.has("wait") ? try o.bool("wait") : false)
        case "set":
            let characteristic = try o.string("characteristic")
            return .set(characteristic: characteristic, value: try o.value("value"))
        case "get":
            return .get(characteristic: try o.string("characteristic"))
        case "status":
            return .status
        case "watch":
            return .watch(requests: o.has("requests") ? try o.bool("requests") : nil)
        case "respond":
            let request = try o.unsigned("request")
            let status = try o.string("status")
            let value = o.has("value") ? try o.value("value") : ControlValue(hex: [])
            if status == "success" { return .respond(request: request, result: .success(value)) }
            guard let e = ATTError(name: status) else {
                throw ControlError(.invalidValue, "\"status\" must be \"success\" or an ATT error name such as \"write_not_permitted\", got \"\(status)\"")
            }
            return .respond(request: request, result: .failure(e))
        case "advertise":
            return .advertise(enable: try o.bool("enable"), set: try o.optionalString("set"))
        case "advertising_data":
            return try advertisingData(o)
        case "disconnect":
            return .disconnect(central: try o.string("central"))
        case "pairing_respond":
            return .pairingRespond(central: try o.optionalString("central"), answer: try ControlPairingAnswer.decode(o))
        case "bonds":
            return .bonds
        case "unbond":
            return .unbond(central: try o.string("central"))
        case "add_service":
            let service = try o.field("service")
            guard case .object = service.kind else {
                throw ControlError(.invalidValue, "\"service\" must be a service object (as in the config's \"services\"), got \(service.typeDescription)")
            }
            return .addService(service: service)
        case "remove_service":
            return .removeService(id: try o.string("service"))
        case "list_services":
            return .listServices
        case "capture":
            if o.has("file") { return .capture(file: try o.string("file")) }
            guard try o.bool("stop") else {
                throw ControlError(.invalidValue, "\"capture\" takes \"file\" (start) or \"stop\": true")
            }
            return .capture(file: nil)
        case "l2cap_listen":
            return .l2capListen(channel: try o.string("channel"))
        case "l2cap_unlisten":
            return .l2capUnlisten(channel: try o.string("channel"))
        case "list_l2cap_channels":
            return .listL2CAPChannels
        case "publish_l2cap_channel":
            let channel = try o.field("channel")
            guard case .object = channel.kind else {
                throw ControlError(.invalidValue, "\"channel\" must be a channel object (as in the config's \"l2cap_channels\"), got \(channel.typeDescription)")
            }
            return .publishL2CAPChannel(channel: channel)
        case "unpublish_l2cap_channel":
            return .unpublishL2CAPChannel(id: try o.string("channel"))
        case "phy":
            return try ControlPHY.decode(o)
        case "data_length":
            let central = try o.string("central")
            let octets = try o.count("tx_octets")
            guard (27...251).contains(octets) else {
                throw ControlError(.invalidValue, "\"tx_octets\" must be 27 ... 251 (LE Data Packet Length Extension), got \(octets)")
            }
            return .dataLength(central: central, txOctets: octets)
        case "connection_parameters":
            return .connectionParameters(central: try o.optionalString("central"), try ControlConnectionParameters.decode(o))
        case "signal":
            let name = try o.string("name")
            guard !name.isEmpty, name.utf8.count <= 64 else { throw ControlError(.invalidValue, "\"name\" must be 1 to 64 bytes") }
            return .signal(name: name)
        default:
            throw ControlError(.unknownOp, "unknown op \"\(op)\"; expected notify, set, get, status, watch, respond, advertise, advertising_data, disconnect, capture, pairing_respond, bonds, unbond, add_service, remove_service, list_services, l2cap_listen, l2cap_unlisten, list_l2cap_channels, publish_l2cap_channel, unpublish_l2cap_channel, connection_parameters, phy, data_length or signal")
        }
    }
}

extension JSONValue {
    /// The type, without the text of a number (which may be huge).
    fileprivate var shortTypeDescription: String {
        switch kind {
        case .number(let n) where n.count > 24: "a number of \(n.count) characters"
        case .number(let n) where n.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }): "a non-integer number (\(n))"
        case .number(let n): "an integer out of range (\(n))"
        default: typeDescription
        }
    }
}
