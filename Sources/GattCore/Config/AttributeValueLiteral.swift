/// The three ways the config file and the control socket write a byte value:
/// `{"hex": "0a 1b"}`, `{"utf8": "text"}` or `{"base64": "Chs="}`.
///
/// - hex: pairs of hex digits, upper or lower case; one space, ':' or '-' may
///   separate whole bytes ("0A1B", "0a 1b", "0A:1B", "0a-1b"), nowhere else (not
///   leading, trailing or doubled: "0a--1b", " 0a", ":0a" are errors); "" is the
///   empty value.
/// - utf8: the string's UTF-8 bytes, no terminating NUL.
/// - base64: RFC 4648 standard alphabet; the '=' padding may be omitted.
public enum AttributeValueLiteral {
    public enum Encoding: String, CaseIterable, Sendable {
        case hex
        case utf8
        case base64
    }

    /// Why a literal could not be decoded; `message` is a complete sentence
    /// fragment for "path: message" reports.
    public struct DecodingError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public static func decode(_ text: String, as encoding: Encoding) throws(DecodingError) -> [UInt8] {
        switch encoding {
        case .hex: return try decodeHex(text)
        case .utf8: return Array(text.utf8)
        case .base64: return try decodeBase64(text)
        }
    }

    public static func decodeHex(_ text: String) throws(DecodingError) -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        var position = 0
        /// The position of a separator not yet followed by a byte.
        var pendingSeparator: Int?
        let rule = "separators may only go between whole bytes (\"0a1b\", \"0a 1b\", \"0a:1b\", \"0a-1b\")"
        for ch in text.unicodeScalars {
            position += 1
            if ch == " " || ch == ":" || ch == "-" {
                if high != nil {
                    throw DecodingError("separator '\(ch)' at position \(position) splits a byte; \(rule)")
                }
                if out.isEmpty {
                    throw DecodingError("separator '\(ch)' at position \(position) comes before the first byte; \(rule)")
                }
                if pendingSeparator != nil {
                    throw DecodingError("separator '\(ch)' at position \(position) follows another separator; \(rule)")
                }
                pendingSeparator = position
                continue
            }
            guard let d = hexDigit(ch) else {
                throw DecodingError("'\(ch)' at position \(position) is not a hex digit")
            }
            pendingSeparator = nil
            if let h = high {
                out.append(h << 4 | d)
                high = nil
            } else {
                high = d
            }
        }
        if high != nil {
            let digits = text.unicodeScalars.filter { hexDigit($0) != nil }.count
            throw DecodingError("odd number of hex digits (\(digits)); every byte needs two digits, e.g. \"0A\" not \"A\"")
        }
        if let p = pendingSeparator {
            throw DecodingError("separator at position \(p) ends the value; \(rule)")
        }
        return out
    }

    private static func hexDigit(_ c: Unicode.Scalar) -> UInt8? {
        switch c.value {
        case 0x30...0x39: UInt8(c.value - 0x30)
        case 0x41...0x46: UInt8(c.value - 0x41 + 10)
        case 0x61...0x66: UInt8(c.value - 0x61 + 10)
        default: nil
        }
    }

    public static func decodeBase64(_ text: String) throws(DecodingError) -> [UInt8] {
        var sextets: [UInt8] = []
        var padding = 0
        var position = 0
        for ch in text.unicodeScalars {
            position += 1
            if ch == "=" { padding += 1; continue }
            if padding > 0 { throw DecodingError("'=' padding at position \(position - 1) is only allowed at the end") }
            let v: UInt8
            switch ch.value {
            case 0x41...0x5A: v = UInt8(ch.value - 0x41)
            case 0x61...0x7A: v = UInt8(ch.value - 0x61 + 26)
            case 0x30...0x39: v = UInt8(ch.value - 0x30 + 52)
            case 0x2B: v = 62  // +
            case 0x2F: v = 63  // /
            default: throw DecodingError("'\(ch)' at position \(position) is not a base64 character (A-Z a-z 0-9 + /)")
            }
            sextets.append(v)
        }
        let rem = sextets.count % 4
        if rem == 1 { throw DecodingError("invalid base64 length (\(sextets.count) characters before padding)") }
        if padding > 0, (sextets.count + padding) % 4 != 0 || padding > 2 {
            throw DecodingError("invalid base64 padding")
        }
        var out: [UInt8] = []
        var k = 0
        while k + 4 <= sextets.count {
            let n = UInt32(sextets[k]) << 18 | UInt32(sextets[k + 1]) << 12 | UInt32(sextets[k + 2]) << 6 | UInt32(sextets[k + 3])
            out += [UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            k += 4
        }
        if rem == 2 {
            let n = UInt32(sextets[k]) << 18 | UInt32(sextets[k + 1]) << 12
            out.append(UInt8(truncatingIfNeeded: n >> 16))
        } else if rem == 3 {
            let n = UInt32(sextets[k]) << 18 | UInt32(sextets[k + 1]) << 12 | UInt32(sextets[k + 2]) << 6
            out += [UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8)]
        }
        return out
    }

    /// Lowercase hex without separators ("0a1b"), the form the table printer uses.
    public static func hexString(_ bytes: [UInt8], separator: String = "") -> String {
        let digits = Array("0123456789abcdef")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined(separator: separator)
    }

    /// Standard base64 with padding.
    public static func base64String(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var out = ""
        var k = 0
        while k < bytes.count {
            let b0 = UInt32(bytes[k])
            let b1 = k + 1 < bytes.count ? UInt32(bytes[k + 1]) : 0
            let b2 = k + 2 < bytes.count ? UInt32(bytes[k + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(k + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : "=")
            out.append(k + 2 < bytes.count ? alphabet[Int(n & 63)] : "=")
            k += 3
        }
        return out
    }
}
