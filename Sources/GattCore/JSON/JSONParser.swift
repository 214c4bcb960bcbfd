/// A strict RFC 8259 parser over UTF-8 bytes: no comments, no trailing
/// commas, no single quotes, strings must be valid UTF-8. Nesting is limited
/// so hostile input cannot exhaust the stack.
public struct JSONParser {
    public static let maximumDepth = 64

    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses one JSON document (a UTF-8 byte order mark is skipped).
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var p = JSONParser(bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { p.i = 3 }
        p.skipWhitespace()
        guard p.i < bytes.count else { throw p.error("the file is empty; expected a JSON object") }
        let v = try p.parseValue()
        p.skipWhitespace()
        if p.i < bytes.count {
            throw p.error("unexpected \(p.describe(p.i)) after the end of the top-level value")
        }
        return v
    }

    // MARK: - Values

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard i < bytes.count else { throw error("unexpected end of file; expected a value") }
        let start = i
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return JSONValue(.string(try parseString()), offset: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONValue(.number(try parseNumber()), offset: start)
        case UInt8(ascii: "t"): try literal("true"); return JSONValue(.bool(true), offset: start)
        case UInt8(ascii: "f"): try literal("false"); return JSONValue(.bool(false), offset: start)
        case UInt8(ascii: "n"): try literal("null"); return JSONValue(.null, offset: start)
        case UInt8(ascii: "'"): throw error("strings must be in double quotes (\"), not single quotes")
        case UInt8(ascii: "/"): throw error("comments are not allowed in JSON")
        case UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ","):
            throw error("unexpected \(describe(i)); expected a value")
        default:
            throw error("unexpected \(describe(i)); expected a value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func literal(_ word: String) throws(JSONSyntaxError) {
        let w = Array(word.utf8)
        guard bytes.count - i >= w.count, Array(bytes[i..<i + w.count]) == w else {
            throw error("invalid literal; expected true, false or null (strings need double quotes)")
        }
        i += w.count
        if i < bytes.count, isIdentifierByte(bytes[i]) {
            throw error("invalid literal; expected true, false or null (strings need double quotes)", at: i - w.count)
        }
    }

    private func isIdentifierByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("nesting is deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        let start = i
        try enter()
        i += 1  // {
        var members: [JSONMember] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return JSONValue(.object([]), offset: start)
        }
        while true {
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of file inside an object; expected a key or '}'") }
            if bytes[i] == UInt8(ascii: "}"), !members.isEmpty {
                throw error("trailing comma before '}' is not allowed in JSON")
            }
            if bytes[i] == UInt8(ascii: "'") { throw error("keys must be in double quotes (\"), not single quotes") }
            if bytes[i] == UInt8(ascii: "/") { throw error("comments are not allowed in JSON") }
            guard bytes[i] == UInt8(ascii: "\"") else {
                throw error("expected a key in double quotes, got \(describe(i))")
            }
            let keyOffset = i
            let key = try parseString()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else {
                throw error("expected ':' after the key \(ConfigReader.quoted(key)), got \(describe(i))")
            }
            i += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONMember(key: key, keyOffset: keyOffset, value: value))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of file inside an object; expected ',' or '}'") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            if bytes[i] == UInt8(ascii: "/") { throw error("comments are not allowed in JSON") }
            throw error("expected ',' or '}' after the value of \(ConfigReader.quoted(key)), got \(describe(i))")
        }
        depth -= 1
        return JSONValue(.object(members), offset: start)
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        let start = i
        try enter()
        i += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return JSONValue(.array([]), offset: start)
        }
        while true {
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of file inside an array; expected a value or ']'") }
            if bytes[i] == UInt8(ascii: "]"), !elements.isEmpty {
                throw error("trailing comma before ']' is not allowed in JSON")
            }
            elements.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of file inside an array; expected ',' or ']'") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            if bytes[i] == UInt8(ascii: "/") { throw error("comments are not allowed in JSON") }
            throw error("expected ',' or ']' after an array element, got \(describe(i))")
        }
        depth -= 1
        return JSONValue(.array(elements), offset: start)
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = i
        func digits(_ p: inout JSONParser) -> Int {
            var n = 0
            while p.i < p.bytes.count, p.bytes[p.i] >= 0x30, p.bytes[p.i] <= 0x39 { p.i += 1; n += 1 }
            return n
        }
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 else {
            throw error("invalid number: expected a digit after '-'")
        }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
                throw error("invalid number: leading zeros are not allowed in JSON", at: start)
            }
        } else {
            _ = digits(&self)
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits(&self) > 0 else { throw error("invalid number: expected a digit after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw error("invalid number: expected a digit in the exponent") }
        }
        if i < bytes.count, isIdentifierByte(bytes[i]) {
            throw error("invalid number (hex values go in a string, e.g. {\"hex\": \"0A\"})", at: start)
        }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = i
        i += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw error("unterminated string (missing closing \")", at: start) }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { i += 1; break }
            if b < 0x20 {
                throw error(b == 0x0A ? "unterminated string (a line break must be written \\n)" : "control character \(describe(i)) in a string must be escaped")
            }
            if b != UInt8(ascii: "\\") { out.append(b); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw error("unterminated string (missing closing \")", at: start) }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired UTF-16 surrogate in a \\u escape", at: i - 6)
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low <= 0xDFFF else { throw error("unpaired UTF-16 surrogate in a \\u escape", at: i - 12) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw error("unpaired UTF-16 surrogate in a \\u escape", at: i - 6)
                }
                guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape", at: i - 6) }
                out += Array(String(Character(u)).utf8)
            default:
                throw error("invalid escape '\\\(String(decoding: [e], as: UTF8.self))' in a string", at: i - 2)
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else {
            throw error("the string is not valid UTF-8", at: start)
        }
        return s
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("invalid \\u escape: expected 4 hex digits", at: i - 2) }
        var v: UInt32 = 0
        for k in 0..<4 {
            let b = bytes[i + k]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw error("invalid \\u escape: expected 4 hex digits", at: i - 2)
            }
            v = v << 4 | d
        }
        i += 4
        return v
    }

    // MARK: - Positions and messages

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    /// "'x'", "end of file", "byte 0x01", "a non-ASCII character".
    private func describe(_ at: Int) -> String {
        guard at < bytes.count else { return "end of file" }
        let b = bytes[at]
        if b >= 0x21 && b < 0x7F { return "'\(String(decoding: [b], as: UTF8.self))'" }
        if b == 0x20 { return "' '" }
        if b >= 0x80 {
            for n in 2...4 where at + n <= bytes.count {
                if let s = String(validating: bytes[at..<at + n], as: UTF8.self) { return "'\(s)'" }
            }
            return "invalid UTF-8 byte 0x" + String(b, radix: 16, uppercase: true)
        }
        let h = String(b, radix: 16, uppercase: true)
        return "byte 0x" + (h.count == 1 ? "0" + h : h)
    }

    private func error(_ message: String, at offset: Int? = nil) -> JSONSyntaxError {
        let o = min(offset ?? i, bytes.count)
        let (line, column) = Self.lineAndColumn(of: o, in: bytes)
        return JSONSyntaxError(offset: o, line: line, column: column, message: message)
    }

    /// 1-based line and character column of a byte offset.
    public static func lineAndColumn(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var k = 0
        let end = min(offset, bytes.count)
        while k < end {
            let b = bytes[k]
            if b == 0x0A {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
            k += 1
        }
        return (line, column)
    }
}
