import GattCore

/// The error codes of the control protocol (`{"ok":false,"error":CODE,...}`).
public enum ControlErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case unknownOp = "unknown_op"
    case missingField = "missing_field"
    case unknownCharacteristic = "unknown_characteristic"
    case invalidValue = "invalid_value"
    case valueTooLong = "value_too_long"
    case notNotifiable = "not_notifiable"
    case busy
    case unknownRequest = "unknown_request"
    case unknownCentral = "unknown_central"
    /// A persisted value could not be made durable; nothing was changed.
    case persistFailed = "persist_failed"
    /// Sent once to a client over `--max-control-clients`, which is then closed.
    case tooManyClients = "too_many_clients"
}

/// A failed request: the code and a human-readable message.
public struct ControlError: Error, Sendable, Equatable {
    public var code: ControlErrorCode
    public var message: String
    public init(_ code: ControlErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// What a control client asks for (one line of the protocol).
public enum ControlCommand: Sendable, Equatable {
    /// Set a value and notify/indicate subscribers (`central`: only that one).
    case notify(characteristic: String, value: [UInt8], central: String?)
    /// Set a value without notifying.
    case set(characteristic: String, value: [UInt8])
    case get(characteristic: String)
    case status
    /// Turn the connection into an event stream.
    case watch
    /// Answer a forwarded read/write request.
    case respond(request: UInt64, result: Result<[UInt8], ATTError>)
    case advertise(enable: Bool)
    case disconnect(central: String)
}

/// One parsed request line: the command and the client's `id` to echo.
public struct ControlRequest: Sendable, Equatable {
    /// The request's `"id"` (any JSON scalar), echoed in the reply.
    public var id: JSONText?
    public var command: ControlCommand
    public init(id: JSONText? = nil, command: ControlCommand) {
        self.id = id
        self.command = command
    }
}

/// Why a line is not a valid request, with the `id` to echo when it could be read.
public struct ControlRequestError: Error, Sendable, Equatable {
    public var id: JSONText?
    public var error: ControlError
}

extension ControlRequest {
    /// Longest request line accepted (without its newline).
    public static let maximumLineLength = 64 * 1024

    /// Parses one line (without the newline) of newline-delimited JSON.
    /// Unknown members are ignored so newer clients can add optional fields.
    public static func parse(_ line: [UInt8]) throws(ControlRequestError) -> ControlRequest {
        let json: JSONValue
        do {
            json = try JSONParser.parse(line)
        } catch {
            throw ControlRequestError(id: nil, error: ControlError(.badJSON, "malformed JSON: \(error.description)"))
        }
        guard case .object(let members) = json.kind else {
            throw ControlRequestError(id: nil, error: ControlError(.badJSON, "a request must be a JSON object, got \(json.typeDescription)"))
        }
        var fields: [String: JSONValue] = [:]
        var duplicate: String?
        for m in members {
            if fields[m.key] != nil { duplicate = duplicate ?? m.key }
            fields[m.key] = fields[m.key] ?? m.value
        }
        var id: JSONText?
        if let v = fields["id"] { id = try requestID(v) }
        if let d = duplicate {
            throw ControlRequestError(id: id, error: ControlError(.badJSON, "duplicate member \"\(d)\""))
        }
        do {
            return ControlRequest(id: id, command: try command(fields))
        } catch {
            throw ControlRequestError(id: id, error: error)
        }
    }

    /// Longest string `id` echoed.
    public static let maximumIDLength = 64

    /// An `id` is echoed only when it is a short string or an integer within Int64's range;
    /// anything else is rejected (not echoed).
    private static func requestID(_ v: JSONValue) throws(ControlRequestError) -> JSONText {
        let expected = "\"id\" must be a string of at most \(maximumIDLength) characters or an integer from -9223372036854775808 to 9223372036854775807"
        switch v.kind {
        case .string(let s) where s.count <= maximumIDLength:
            return .string(s)
        case .number(let n) where n.count <= 20 && Int64(n) != nil:
            return .rawNumber(n)
        case .string:
            throw ControlRequestError(id: nil, error: ControlError(.invalidValue, "\(expected), got a string of \(v.kindLength) characters"))
        default:
            throw ControlRequestError(id: nil, error: ControlError(.invalidValue, "\(expected), got \(v.shortTypeDescription)"))
        }
    }

    private static func command(_ f: [String: JSONValue]) throws(ControlError) -> ControlCommand {
        let op = try string(f, "op")
        switch op {
        case "notify":
            let central: String? = f["central"] == nil ? nil : try string(f, "central")
            return .notify(characteristic: try string(f, "characteristic"), value: try value(f, "value"), central: central)
        case "set":
            return .set(characteristic: try string(f, "characteristic"), value: try value(f, "value"))
        case "get":
            return .get(characteristic: try string(f, "characteristic"))
        case "status":
            return .status
        case "watch":
            return .watch
        case "respond":
            let request = try unsigned(f, "request")
            let status = try string(f, "status")
            let v: [UInt8] = f["value"] == nil ? [] : try value(f, "value")
            if status == "success" { return .respond(request: request, result: .success(v)) }
            guard let e = ATTError(name: status) else {
                throw ControlError(.invalidValue, "\"status\" must be \"success\" or an ATT error name such as \"write_not_permitted\", got \"\(status)\"")
            }
            return .respond(request: request, result: .failure(e))
        case "advertise":
            return .advertise(enable: try bool(f, "enable"))
        case "disconnect":
            return .disconnect(central: try string(f, "central"))
        default:
            throw ControlError(.unknownOp, "unknown op \"\(op)\"; expected notify, set, get, status, watch, respond, advertise or disconnect")
        }
    }

    private static func field(_ f: [String: JSONValue], _ key: String) throws(ControlError) -> JSONValue {
        guard let v = f[key] else { throw ControlError(.missingField, "missing \"\(key)\"") }
        return v
    }

    private static func string(_ f: [String: JSONValue], _ key: String) throws(ControlError) -> String {
        let v = try field(f, key)
        guard case .string(let s) = v.kind else { throw ControlError(.invalidValue, "\"\(key)\" must be a string, got \(v.typeDescription)") }
        return s
    }

    private static func bool(_ f: [String: JSONValue], _ key: String) throws(ControlError) -> Bool {
        let v = try field(f, key)
        guard case .bool(let b) = v.kind else { throw ControlError(.invalidValue, "\"\(key)\" must be true or false, got \(v.typeDescription)") }
        return b
    }

    private static func unsigned(_ f: [String: JSONValue], _ key: String) throws(ControlError) -> UInt64 {
        let v = try field(f, key)
        guard case .number(let n) = v.kind, let u = UInt64(n) else {
            throw ControlError(.invalidValue, "\"\(key)\" must be a non-negative integer, got \(v.typeDescription)")
        }
        return u
    }

    /// `{"hex": ...}`, `{"utf8": ...}` or `{"base64": ...}`.
    private static func value(_ f: [String: JSONValue], _ key: String) throws(ControlError) -> [UInt8] {
        let v = try field(f, key)
        let expected = "\"\(key)\" must be an object with one of \"hex\", \"utf8\" or \"base64\""
        guard case .object(let members) = v.kind else { throw ControlError(.invalidValue, "\(expected), got \(v.typeDescription)") }
        guard members.count == 1, let m = members.first, let encoding = AttributeValueLiteral.Encoding(rawValue: m.key) else {
            throw ControlError(.invalidValue, expected)
        }
        guard case .string(let text) = m.value.kind else {
            throw ControlError(.invalidValue, "\"\(key)\".\"\(m.key)\" must be a string, got \(m.value.typeDescription)")
        }
        do {
            return try AttributeValueLiteral.decode(text, as: encoding)
        } catch {
            throw ControlError(.invalidValue, "\"\(key)\".\"\(m.key)\": \(error.message)")
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

    fileprivate var kindLength: Int {
        if case .string(let s) = kind { return s.count }
        return 0
    }
}
