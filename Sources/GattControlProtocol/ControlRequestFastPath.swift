import GattCore

/// The control socket's fast path for the hot request, `notify` with a hex value: one pass
/// over the line's bytes, the hex decoded straight into the value, no JSON tree and no
/// member dictionary. It accepts only the plain shape clients send
/// (`{"op":"notify","characteristic":"stream","value":{"hex":"0102"},"id":7}`: members in
/// any order, whitespace between tokens, `central` and `id` optional, strings of printable
/// ASCII without escapes, an even-length hex string without separators) and answers nil
/// for anything else, which the general decoder (`ControlRequest.decode`) then reads, with
/// its error messages. Whatever it accepts decodes exactly as `decode` would (tested).
extension ControlRequest {
    public static func decodeNotify(_ line: [UInt8]) -> ControlRequest? {
        line.withUnsafeBufferPointer { bytes in
            var scanner = FastNotifyScanner(bytes: bytes)
            return scanner.request()
        }
    }
}

extension ControlValue {
    /// A value whose text and bytes the caller has already checked against each other.
    init(checkedText text: String, encoding: AttributeValueLiteral.Encoding, bytes: [UInt8]) {
        self.encoding = encoding
        self.text = text
        self.bytes = bytes
    }
}

private struct FastNotifyScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func request() -> ControlRequest? {
        var sawOp = false
        var characteristic: String?
        var value: ControlValue?
        var central: String?
        var id: JSONText?
        var sawID = false
        var wait: Bool?
        guard take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard let key = rawString() else { return nil }
            guard take(UInt8(ascii: ":")) else { return nil }
            switch key.count {
            case 2 where key.elementsEqual("op".utf8):
                guard !sawOp, let op = rawString(), op.elementsEqual("notify".utf8) else { return nil }
                sawOp = true
            case 14 where key.elementsEqual("characteristic".utf8):
                guard characteristic == nil, let s = rawString() else { return nil }
                characteristic = String(decoding: s, as: UTF8.self)
            case 5 where key.elementsEqual("value".utf8):
                guard value == nil, let v = hexValue() else { return nil }
                value = v
            case 7 where key.elementsEqual("central".utf8):
                guard central == nil, let s = rawString() else { return nil }
                central = String(decoding: s, as: UTF8.self)
            case 4 where key.elementsEqual("wait".utf8):
                guard wait == nil, let b = bool() else { return nil }
                wait = b
            case 2 where key.elementsEqual("id".utf8):
                guard !sawID, let v = requestID() else { return nil }
                id = v
                sawID = true
            default:
                return nil
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        guard i == bytes.count, sawOp, let characteristic, let value else { return nil }
        return ControlRequest(id: id, command: .notify(characteristic: characteristic, value: value, central: central, wait: wait ?? false))
    }

    /// `true` or `false` after optional whitespace.
    mutating func bool() -> Bool? {
        skipSpace()
        let rest = bytes[i...]
        if rest.starts(with: "true".utf8) {
            i += 4
            return true
        }
        if rest.starts(with: "false".utf8) {
            i += 5
            return false
        }
        return nil
    }

    /// Skips JSON whitespace.
    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    /// The byte `b` after optional whitespace.
    mutating func take(_ b: UInt8) -> Bool {
        skipSpace()
        guard i < bytes.count, bytes[i] == b else { return false }
        i += 1
        return true
    }

    /// A string's bytes: printable ASCII, no escapes (anything else: nil).
    mutating func rawString() -> UnsafeBufferPointer<UInt8>.SubSequence? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = i
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                return bytes[start..<i - 1]
            }
            guard b >= 0x20, b < 0x7F, b != UInt8(ascii: "\\") else { return nil }
            i += 1
        }
        return nil
    }

    /// `{"hex":"..."}` with an even number of hex digits and nothing else.
    mutating func hexValue() -> ControlValue? {
        guard take(UInt8(ascii: "{")), let key = rawString(), key.elementsEqual("hex".utf8),
              take(UInt8(ascii: ":")), let digits = rawString(), take(UInt8(ascii: "}")),
              digits.count % 2 == 0
        else { return nil }
        var out = [UInt8](repeating: 0, count: digits.count / 2)
        var k = digits.startIndex
        for n in out.indices {
            guard let high = Self.nibble(digits[k]), let low = Self.nibble(digits[k + 1]) else { return nil }
            out[n] = high << 4 | low
            k += 2
        }
        return ControlValue(checkedText: String(decoding: digits, as: UTF8.self), encoding: .hex, bytes: out)
    }

    static func nibble(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A short string or an integer `id` as `decode` accepts it (anything else: nil).
    mutating func requestID() -> JSONText? {
        skipSpace()
        guard i < bytes.count else { return nil }
        if bytes[i] == UInt8(ascii: "\"") {
            guard let s = rawString(), s.count <= ControlRequest.maximumIDLength else { return nil }
            return .string(String(decoding: s, as: UTF8.self))
        }
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        let digitsStart = i
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        let digitCount = i - digitsStart
        // JSON integers: no leading zero; a fraction or exponent goes the general way.
        guard digitCount > 0, digitCount == 1 || bytes[digitsStart] != UInt8(ascii: "0"), i - start <= 20 else { return nil }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") || bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") { return nil }
        let n = String(decoding: bytes[start..<i], as: UTF8.self)
        guard Int64(n) != nil else { return nil }
        return .rawNumber(n)
    }
}
