/// The one JSON writer (the strict reader is `JSONParser`): control-socket replies and
/// events, and the state files. Objects keep their members in the order given, so every
/// text is stable and testable.
public indirect enum JSONText: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    /// A number literal echoed as received (request ids).
    case rawNumber(String)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])

    public static func == (a: JSONText, b: JSONText) -> Bool { a.text == b.text }

    /// `{"hex": "..."}`: how values are reported.
    public static func hexValue(_ bytes: [UInt8]) -> JSONText {
        .object([("hex", .string(AttributeValueLiteral.hexString(bytes)))])
    }

    /// Compact JSON text (no spaces, no newline).
    public var text: String {
        var s = ""
        write(to: &s)
        return s
    }

    public func write(to s: inout String) {
        switch self {
        case .null: s += "null"
        case .bool(let b): s += b ? "true" : "false"
        case .int(let i): s += String(i)
        case .rawNumber(let n): s += n
        case .string(let t): Self.writeString(t, to: &s)
        case .array(let items):
            s += "["
            for (i, item) in items.enumerated() {
                if i > 0 { s += "," }
                item.write(to: &s)
            }
            s += "]"
        case .object(let members):
            s += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { s += "," }
                Self.writeString(key, to: &s)
                s += ":"
                value.write(to: &s)
            }
            s += "}"
        }
    }

    /// RFC 8259 §7 string escaping; non-ASCII is written as UTF-8.
    public static func writeString(_ t: String, to s: inout String) {
        s += "\""
        for u in t.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            case _ where u.value < 0x20:
                let h = String(u.value, radix: 16)
                s += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: s.unicodeScalars.append(u)
            }
        }
        s += "\""
    }
}

extension JSONText {
    /// The parsed value as text to write (numbers as written, members in order).
    public init(_ v: JSONValue) {
        switch v.kind {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .rawNumber(n)
        case .string(let s): self = .string(s)
        case .array(let items): self = .array(items.map(JSONText.init))
        case .object(let members): self = .object(members.map { ($0.key, JSONText($0.value)) })
        }
    }
}
