/// Typed access to a parsed JSON document that collects every problem
/// (with its JSON path) instead of stopping at the first one.
public final class ConfigReader {
    public init() {}
    private struct Entry {
        var offset: Int
        var sequence: Int
        var error: ConfigError
    }

    /// The errors kept so far: at most twice `ConfigErrors.reportLimit` between prunings,
    /// so a file with millions of problems costs no more memory than one with a hundred.
    private var entries: [Entry] = []
    /// Every error reported, kept or not.
    private(set) var errorCount = 0

    public var hasErrors: Bool { errorCount > 0 }

    /// The first `ConfigErrors.reportLimit` errors in document order (by the offset
    /// of the offending value, then in the order they were found) and the total.
    public var errors: ConfigErrors {
        ConfigErrors(Self.firstInOrder(entries).map(\.error), totalCount: errorCount)
    }

    public func error(_ path: String, _ message: String, at offset: Int) {
        entries.append(Entry(offset: offset, sequence: errorCount, error: ConfigError(path: path, message: message)))
        errorCount += 1
        if entries.count >= 2 * ConfigErrors.reportLimit { entries = Self.firstInOrder(entries) }
    }

    private static func firstInOrder(_ entries: [Entry]) -> [Entry] {
        Array(entries.sorted { ($0.offset, $0.sequence) < ($1.offset, $1.sequence) }.prefix(ConfigErrors.reportLimit))
    }

    // MARK: - Quoting

    /// Longer keys and values are shortened in messages and paths.
    static let quoteLimit = 64
    /// What a shortened text keeps of its beginning (Unicode scalars).
    static let quotePrefix = 40

    /// `text` itself when short; else its first characters, "…" and its size, so a
    /// 2 MB key or a 1M-digit number costs a short line, not a copy of itself.
    static func shortened(_ text: String) -> String {
        guard text.utf8.count > quoteLimit else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(quotePrefix))) + "… (\(text.utf8.count) bytes)"
    }

    /// `"text"` in double quotes; a long one as `"beginning…" (N bytes)`.
    public static func quoted(_ text: String) -> String {
        guard text.utf8.count > quoteLimit else { return "\"" + text + "\"" }
        return "\"" + String(String.UnicodeScalarView(text.unicodeScalars.prefix(quotePrefix))) + "…\" (\(text.utf8.count) bytes)"
    }

    // MARK: - Paths

    public static func member(_ parent: String, _ key: String) -> String {
        // An empty key is shown as "" so that its path is never empty.
        let key = key.isEmpty ? "\"\"" : shortened(key)
        return parent.isEmpty || parent == ConfigError.rootPath ? key : parent + "." + key
    }

    public static func element(_ parent: String, _ index: Int) -> String { "\(parent)[\(index)]" }

    // MARK: - Objects

    /// An object's members by key (first occurrence), its path and offset.
    public struct Object {
        public let path: String
        public let offset: Int
        public let members: [String: JSONMember]

        public func has(_ key: String) -> Bool { members[key] != nil }
        public func value(_ key: String) -> JSONValue? { members[key]?.value }
        public func path(_ key: String) -> String { ConfigReader.member(path, key) }
    }

    /// Type-checks an object, reports duplicate and unknown keys (with a
    /// "did you mean" hint) and missing required keys. A key of `misplaced` is known
    /// elsewhere but not allowed here: its message says why instead of "unknown key".
    public func object(_ v: JSONValue, at path: String, keys: [String], required: [String] = [], misplaced: [String: String] = [:]) -> Object? {
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
                if let why = misplaced[m.key] {
                    error(p, why, at: m.keyOffset)
                } else if let hint = self.hint(for: m.key, in: keys) {
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

    public func string(_ v: JSONValue, at path: String) -> String? {
        guard case .string(let s) = v.kind else {
            error(path, "expected a string, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return s
    }

    public func bool(_ v: JSONValue, at path: String) -> Bool? {
        guard case .bool(let b) = v.kind else {
            error(path, "expected true or false, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return b
    }

    public func array(_ v: JSONValue, at path: String) -> [JSONValue]? {
        guard case .array(let a) = v.kind else {
            error(path, "expected an array, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        return a
    }

    /// A JSON integer (no fraction, no exponent) within `range`.
    public func integer(_ v: JSONValue, at path: String, in range: ClosedRange<Int>, unit: String = "") -> Int? {
        guard case .number(let text) = v.kind else {
            error(path, "expected an integer, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        guard text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) else {
            error(path, "expected an integer, got \(Self.shortened(text))", at: v.offset)
            return nil
        }
        guard let n = Int(text), range.contains(n) else {
            error(path, "\(Self.shortened(text))\(unit) is out of range; allowed: \(range.lowerBound)...\(range.upperBound)\(unit)", at: v.offset)
            return nil
        }
        return n
    }

    /// A JSON number (integer or fraction) within `range`.
    public func number(_ v: JSONValue, at path: String, in range: ClosedRange<Double>, unit: String = "") -> Double? {
        guard case .number(let text) = v.kind else {
            error(path, "expected a number, got \(v.typeDescription)", at: v.offset)
            return nil
        }
        guard let d = Double(text), d.isFinite, range.contains(d) else {
            error(path, "\(Self.shortened(text))\(unit) is out of range; allowed: \(Self.format(range.lowerBound))...\(Self.format(range.upperBound))\(unit)", at: v.offset)
            return nil
        }
        return d
    }

    static func format(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
    }

    /// One of `choices` (exact, case-sensitive), with a hint when close;
    /// `what` has its article ("a handler").
    public func choice(_ v: JSONValue, at path: String, _ choices: [String], what: String) -> String? {
        guard let s = string(v, at: path) else { return nil }
        if choices.contains(s) { return s }
        var m = "\(Self.quoted(s)) is not \(what)"
        if let hint = self.hint(for: s, in: choices) {
            m += "; did you mean \"\(hint)\"?"
        } else {
            m += "; expected one of: " + choices.map { "\"\($0)\"" }.joined(separator: ", ")
        }
        error(path, m, at: v.offset)
        return nil
    }

    public func uuid(_ v: JSONValue, at path: String) -> BluetoothUUID? {
        guard let s = string(v, at: path) else { return nil }
        guard let u = BluetoothUUID(s) else {
            error(path, "\(Self.quoted(s)) is not a UUID; expected 4 hex digits (\"180D\"), 8 hex digits (\"1234ABCD\") or the 36-character form (\"6e400001-b5a3-f393-e0a9-e50e24dcca9e\")", at: v.offset)
            return nil
        }
        return u
    }

    /// `{"hex": "..."}`, `{"utf8": "..."}` or `{"base64": "..."}`.
    public func bytes(_ v: JSONValue, at path: String) -> [UInt8]? {
        let encodings = AttributeValueLiteral.Encoding.allCases.map(\.rawValue)
        guard case .object(let members) = v.kind else {
            var m = "expected an object with one of \"hex\", \"utf8\" or \"base64\", got \(v.typeDescription)"
            if case .string(let s) = v.kind {
                m += s.utf8.count > Self.quoteLimit ? "; write {\"hex\": …} or {\"utf8\": …}" : "; write {\"hex\": \"\(s)\"} or {\"utf8\": \"\(s)\"}"
            }
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
            let hint = self.hint(for: m.key, in: encodings).map { "; did you mean \"\($0)\"?" } ?? "; expected \"hex\", \"utf8\" or \"base64\""
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

    /// How many candidates the "did you mean" hints may still compare against: hints
    /// are a courtesy, and a file with thousands of unknown names must not turn them
    /// into names × candidates work.
    private var hintBudget = 20_000

    /// `closest(to:in:)` while the budget lasts (each candidate compared costs one).
    func hint(for word: String, in candidates: [String]) -> String? {
        guard hintBudget >= candidates.count else { return nil }
        hintBudget -= candidates.count
        return Self.closest(to: word, in: candidates)
    }

    /// The candidate closest to `word` by edit distance (with transpositions),
    /// when close enough to be a plausible typo. Words and candidates longer than
    /// `quoteLimit` get no hint, so the cost per candidate is bounded.
    public static func closest(to word: String, in candidates: [String]) -> String? {
        guard word.utf8.count <= quoteLimit else { return nil }
        var best: (String, Int)?
        let w = Array(word.lowercased().unicodeScalars)
        for c in candidates where c.utf8.count <= quoteLimit {
            let lc = Array(c.lowercased().unicodeScalars)
            let limit = max(1, min(3, c.count / 3))
            // The distance is at least the difference in length: skip the table then.
            var d = abs(w.count - lc.count) > limit ? limit + 1 : editDistance(w, lc)
            if d == 0 { return c }
            // An abbreviation ("batt" for "battery") counts as close.
            if d > limit, w.count >= 3, lc.starts(with: w) { d = limit }
            if d <= limit, d < (best?.1 ?? Int.max) { best = (c, d) }
        }
        return best?.0
    }

    /// Optimal string alignment distance (Levenshtein plus adjacent swaps), with
    /// three rows of the table instead of all of it.
    static func editDistance(_ x: [Unicode.Scalar], _ y: [Unicode.Scalar]) -> Int {
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var before = [Int](repeating: 0, count: y.count + 1)  // row i-2
        var previous = Array(0...y.count)  // row i-1
        var current = [Int](repeating: 0, count: y.count + 1)
        for i in 1...x.count {
            current[0] = i
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[y.count]
    }
}
