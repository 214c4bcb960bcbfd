import GattCore

/// A value on the wire: `{"hex": ...}`, `{"utf8": ...}` or `{"base64": ...}`. The literal is
/// kept as written (a request's `{"hex": "00 48"}` is sent and decoded as such); `bytes` is
/// what it means.
public struct ControlValue: Sendable, Equatable {
    public let encoding: AttributeValueLiteral.Encoding
    public let text: String
    public let bytes: [UInt8]

    /// `text` checked against `encoding`.
    public init(_ text: String, as encoding: AttributeValueLiteral.Encoding) throws(AttributeValueLiteral.DecodingError) {
        self.encoding = encoding
        self.text = text
        self.bytes = try AttributeValueLiteral.decode(text, as: encoding)
    }

    /// Bytes written as lowercase hex: how gattd reports values.
    public init(hex bytes: [UInt8]) {
        encoding = .hex
        text = AttributeValueLiteral.hexString(bytes)
        self.bytes = bytes
    }

    public var json: JSONText { .object([(encoding.rawValue, .string(text))]) }
}
