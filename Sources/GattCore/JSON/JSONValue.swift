/// A parsed JSON value (RFC 8259) that remembers where it starts in the
/// input, so configuration errors can be reported in document order and
/// syntax errors with a line and column. Numbers keep their literal text so
/// `1`, `1.0` and `true` stay distinguishable.
public struct JSONValue: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        /// The number exactly as written (validated against the JSON grammar).
        case number(String)
        case string(String)
        case array([JSONValue])
        /// Members in document order; duplicate keys are kept (the reader reports them).
        case object([JSONMember])
    }

    public var kind: Kind
    /// Byte offset of the value's first character in the input.
    public var offset: Int

    public init(_ kind: Kind, offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// "an object", "a string", ... for "expected X, got Y" messages.
    public var typeDescription: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let n): "a number (\(ConfigReader.shortened(n)))"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"key": value` member of a JSON object.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    /// Byte offset of the key's opening quote.
    public var keyOffset: Int
    public var value: JSONValue
    public init(key: String, keyOffset: Int, value: JSONValue) {
        self.key = key
        self.keyOffset = keyOffset
        self.value = value
    }
}

/// A JSON syntax error with its position (1-based line and column; the
/// column counts characters, not bytes).
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var line: Int
    public var column: Int
    public var message: String
    public var description: String { "line \(line), column \(column): \(message)" }
}
