/// Typed access to a parsed JSON document that collects every problem
/// (with its JSON path) instead of stopping at the first one.
final class ConfigReader {
    private struct Entry {
        var offset: Int
        var sequence: Int
        var error: ConfigError
    }

    private var entries: [Entry] = []

    var hasErrors: Bool { !entries.isEmpty }

    /// Errors in document order (by the offset of the offending value, then
    /// in the order they were found).
    var errors: [ConfigError] {
        entries.sorted { ($0.offset, $0.sequence) < ($1.offset, $1.sequence) }.map(\.error)
    }

    func error(_ path: String, _ message: String, at offset: Int) {
        entries.append(Entry(offset: offset, sequence: entries.count, error: ConfigError(path: path, message: message)))
    }

    var errorCount: Int { entries.count }

    // MARK: - Paths

    static func member(_ parent: String, _ key: String) -> String {
        parent.isEmpty || parent == ConfigError.rootPath ? key : parent + "." + key
    }

    static func element(_ parent: String, _ index: Int) -> String { "\(parent)[\(index)]" }

    // MARK: - Objects

    /// An object's members by key (first occurrence), its path and offset.
    struct Object {
        let path: String
        let offset: Int
        let members: [String: JSONMember]

        func has(_ key: String) -> Bool { members[key] != nil }
        func value(_ key: String) -> JSONValue? { members[key]?.value }
        func path(_ key: String) -> String { ConfigReader.member(path, key) }
    }

    /// Type-checks an object, reports duplicate and unknown keys (with a
    /// "did you mean" hint) and missing required keys.
    func object(_ v: JSONValue, at path: String, keys: [String], required: [String] = []) -> Object? {
        guard case .object(let members) = v.kind else {
            error(path, "expected an object, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        var byKey: [String: JSONMember] = [:]
        for m in members {
            let p = Self.member(path, m.key)
            if byKey[m.key] != nil {
                error(p, "key appears more than once in this object", at: m.keyOffset)
                continue
            }
            byKey[m.key] = m
            if !keys.contains(m.key) {
                if let hint = Self.closest(to: m.key, in: keys) {
                    error(p, "unknown key; did you mean \"\(hint)\"?", at: m.keyOffset)
                } else {
                    error(p, "unknown key; allowed keys here: \(keys.filter { $0 != "$schema" }.joined(separator: ", "))", at: m.keyOffset)
                }
            }
        }
        for k in required where byKey[k] == nil {
            error(Self.member(path, k), "required key is missing", at: v.offset)
        }
        return Object(path: path, offset: v.offset, members: byKey)
    }

    // MARK: - Scalars

    func string(_ v: JSONValue, at path: String) -> String? {
        guard case .string(let s) = v.kind else {
            error(path, "expected a string, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return s
    }

    func bool(_ v: JSONValue, at path: String) -> Bool? {
        guard case .bool(let b) = v.kind else {
            error(path, "expected true or false, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return b
    }

    func array(_ v: JSONValue, at path: String) -> [JSONValue]? {
        guard case .array(let a) = v.kind else {
            error(path, "expected an array, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return a
    }

    /// A JSON integer (no fraction, no exponent) within `range`.
    func integer(_ v: JSONValue, at path: String, in range: ClosedRange<Int>, unit: String = "") -> Int? {
        guard case .number(let text) = v.kind else {
            error(path, "expected an integer, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) else {
            error(path, "expected an integer, got \(text)", at: v.offset)
            return nil
        }
        guard let n = Int(text), range.contains(n) else {
            error(path, "\(text)\(unit) is out of range; allowed: \(range.lowerBound)...\(range.upperBound)\(unit)", at: v.offset)
            return nil
        }
        return n
    }

    /// A JSON number (integer or fraction) within `range`.
    func number(_ v: JSONValue, at path: String, in range: ClosedRange<Double>, unit: String = "") -> Double? {
        guard case .number(let text) = v.kind else {
            error(path, "expected a number, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        guard let d = Double(text), d.isFinite, range.contains(d) else {
            error(path, "\(text)\(unit) is out of range; allowed: \(Self.format(range.lowerBound))...\(Self.format(range.upperBound))\(unit)", at: v.offset)
            return nil
        }
        return d
    }

    static func format(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
    }

    /// One of `choices` (exact, case-sensitive), with a hint when close;
    /// `what` has its article ("a handler").
    func choice(_ v: JSONValue, at path: String, _ choices: [String], what: String) -> String? {
        guard let s = string(v, at: path) else { return nil }
        if choices.contains(s) { return s }
        var m = "\"\(s)\" is not \(what)"
        if let hint = Self.closest(to: s, in: choices) {
            m += "; did you mean \"\(hint)\"?"
        } else {
            m += "; expected one of: " + choices.map { "\"\($0)\"" }.joined(separator: ", ")
        }
        error(path, m, at: v.offset)
        return nil
    }

    func uuid(_ v: JSONValue, at path: String) -> BluetoothUUID? {
        guard let s = string(v, at: path) else { return nil }
        guard let u = BluetoothUUID(s) else {
            error(path, "\"\(s)\" is not a UUID; expected 4 hex digits (\"180D\"), 8 hex digits (\"1234ABCD\") or the 36-character form (\"6e400001-b5a3-f393-e0a9-e50e24dcca9e\")", at: v.offset)
            return nil
        }
        return u
    }

    /// `{"hex": "..."}`, `{"utf8": "..."}` or `{"base64": "..."}`.
    func bytes(_ v: JSONValue, at path: String) -> [UInt8]? {
        let encodings = AttributeValueLiteral.Encoding.allCases.map(\.rawValue)
        guard case .object(let members) = v.kind else {
            var m = "expected an object with one of \"hex\", \"utf8\" or \"base64\", got \(v.typeDescription)"
            if case .string(let s) = v.kind { m += "; write {\"hex\": \"\(s)\"} or {\"utf8\": \"\(s)\"}" }
            error(path, m, at: v.offset)
            return nil
        }
        guard members.count == 1, let m = members.first else {
            let found = members.isEmpty ? "an empty object" : "\(members.count) keys"
            error(path, "expected exactly one of \"hex\", \"utf8\" or \"base64\", got \(found)", at: v.offset)
            return nil
        }
        let p = Self.member(path, m.key)
        guard let encoding = AttributeValueLiteral.Encoding(rawValue: m.key) else {
            let hint = Self.closest(to: m.key, in: encodings).map { "; did you mean \"\($0)\"?" } ?? "; expected \"hex\", \"utf8\" or \"base64\""
            error(p, "unknown value encoding" + hint, at: m.keyOffset)
            return nil
        }
        guard let text = string(m.value, at: p) else { return nil }
        do {
            return try AttributeValueLiteral.decode(text, as: encoding)
        } catch {
            self.error(p, error.message, at: m.value.offset)
            return nil
        }
    }

    // MARK: - Hints

    /// The candidate closest to `word` by edit distance (with transpositions),
    /// when close enough to be a plausible typo.
    static func closest(to word: String, in candidates: [String]) -> String? {
        var best: (String, Int)?
        let w = word.lowercased()
        for c in candidates {
            let lc = c.lowercased()
            var d = editDistance(w, lc)
            if d == 0 { return c }
            let limit = max(1, min(3, c.count / 3))
            // An abbreviation ("batt" for "battery") counts as close.
            if d > limit, w.count >= 3, lc.hasPrefix(w) { d = limit }
            if d <= limit, d < (best?.1 ?? Int.max) { best = (c, d) }
        }
        return best?.0
    }

    /// Optimal string alignment distance (Levenshtein plus adjacent swaps).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a.unicodeScalars)
        let y = Array(b.unicodeScalars)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var d = Array(repeating: Array(repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }
}
