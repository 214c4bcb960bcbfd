import GattCore

/// The members of one JSON object of the protocol, read with errors that name the member's
/// path (`"enable"`, `"value"."hex"`, `"connections"[0]."mtu"`) under the protocol's codes:
/// `missing_field` when absent, `invalid_value` when of the wrong type or out of range.
/// Unknown members are ignored (newer peers may add optional ones); the first duplicate is
/// remembered for the caller to reject (`bad_json`) once it has read what it must echo.
struct ControlObjectReader {
    private var members: [String: JSONValue] = [:]
    /// The object's own path: "" at the top level.
    let path: String
    private(set) var duplicate: String?

    /// nil when `v` is not an object.
    init?(_ v: JSONValue, path: String = "") {
        guard case .object(let list) = v.kind else { return nil }
        self.path = path
        for m in list {
            if members[m.key] != nil {
                duplicate = duplicate ?? m.key
            } else {
                members[m.key] = m.value
            }
        }
    }

    /// `"key"` at the top level, `PATH."key"` below.
    func path(_ key: String) -> String { (path.isEmpty ? "" : path + ".") + "\"\(key)\"" }

    func has(_ key: String) -> Bool { members[key] != nil }
    func raw(_ key: String) -> JSONValue? { members[key] }

    func rejectDuplicates() throws(ControlError) {
        if let d = duplicate { throw ControlError(.badJSON, "duplicate member \(path(d))") }
    }

    func field(_ key: String) throws(ControlError) -> JSONValue {
        guard let v = members[key] else { throw ControlError(.missingField, "missing \(path(key))") }
        return v
    }

    func string(_ key: String) throws(ControlError) -> String {
        let v = try field(key)
        guard case .string(let s) = v.kind else { throw ControlError(.invalidValue, "\(path(key)) must be a string, got \(v.typeDescription)") }
        return s
    }

    func optionalString(_ key: String) throws(ControlError) -> String? {
        has(key) ? try string(key) : nil
    }

    func bool(_ key: String) throws(ControlError) -> Bool {
        let v = try field(key)
        guard case .bool(let b) = v.kind else { throw ControlError(.invalidValue, "\(path(key)) must be true or false, got \(v.typeDescription)") }
        return b
    }

    func unsigned(_ key: String) throws(ControlError) -> UInt64 {
        let v = try field(key)
        guard case .number(let n) = v.kind, let u = UInt64(n) else {
            throw ControlError(.invalidValue, "\(path(key)) must be a non-negative integer, got \(v.typeDescription)")
        }
        return u
    }

    /// A non-negative integer that fits in `Int`.
    func count(_ key: String) throws(ControlError) -> Int {
        let v = try field(key)
        guard case .number(let n) = v.kind, let i = Int(n), i >= 0 else {
            throw ControlError(.invalidValue, "\(path(key)) must be a non-negative integer, got \(v.typeDescription)")
        }
        return i
    }

    func object(_ key: String) throws(ControlError) -> ControlObjectReader {
        let v = try field(key)
        guard let o = ControlObjectReader(v, path: path(key)) else {
            throw ControlError(.invalidValue, "\(path(key)) must be an object, got \(v.typeDescription)")
        }
        try o.rejectDuplicates()
        return o
    }

    /// The elements' readers, each at `PATH."key"[i]`.
    func objects(_ key: String) throws(ControlError) -> [ControlObjectReader] {
        let v = try field(key)
        guard case .array(let items) = v.kind else { throw ControlError(.invalidValue, "\(path(key)) must be an array, got \(v.typeDescription)") }
        var out: [ControlObjectReader] = []
        for (i, item) in items.enumerated() {
            let p = "\(path(key))[\(i)]"
            guard let o = ControlObjectReader(item, path: p) else { throw ControlError(.invalidValue, "\(p) must be an object, got \(item.typeDescription)") }
            try o.rejectDuplicates()
            out.append(o)
        }
        return out
    }

    /// `{"hex": ...}`, `{"utf8": ...}` or `{"base64": ...}`.
    func value(_ key: String) throws(ControlError) -> ControlValue {
        let v = try field(key)
        let expected = "\(path(key)) must be an object with one of \"hex\", \"utf8\" or \"base64\""
        guard case .object(let list) = v.kind else { throw ControlError(.invalidValue, "\(expected), got \(v.typeDescription)") }
        guard list.count == 1, let m = list.first, let encoding = AttributeValueLiteral.Encoding(rawValue: m.key) else {
            throw ControlError(.invalidValue, expected)
        }
        guard case .string(let text) = m.value.kind else {
            throw ControlError(.invalidValue, "\(path(key)).\"\(m.key)\" must be a string, got \(m.value.typeDescription)")
        }
        do {
            return try ControlValue(text, as: encoding)
        } catch {
            throw ControlError(.invalidValue, "\(path(key)).\"\(m.key)\": \(error.message)")
        }
    }

    /// One of `names` (`invalid_value` listing them otherwise).
    func oneOf(_ key: String, _ names: [String]) throws(ControlError) -> String {
        let s = try string(key)
        guard names.contains(s) else {
            throw ControlError(.invalidValue, "\(path(key)) must be one of \(names.map { "\"\($0)\"" }.joined(separator: ", ")), got \"\(s)\"")
        }
        return s
    }
}

/// Parses one line into an object reader; `bad_json` when it is not JSON or not an object.
/// `what` names the line in the message ("a request", "a reply", "an event").
func readObjectLine(_ line: [UInt8], what: String) throws(ControlError) -> ControlObjectReader {
    let json: JSONValue
    do {
        json = try JSONParser.parse(line)
    } catch {
        throw ControlError(.badJSON, "malformed JSON: \(error.description)")
    }
    guard let o = ControlObjectReader(json) else {
        throw ControlError(.badJSON, "\(what) must be a JSON object, got \(json.typeDescription)")
    }
    return o
}
