import GattCore

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
