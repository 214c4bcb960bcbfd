/// One D-Bus value with its type (D-Bus Specification, "Type System"). sd-bus marshals it;
/// this enum only says what to marshal and what was read.
public indirect enum DBusValue: Sendable, Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor (`h`): read, a duplicate the reader owns; written (a call, a reply,
    /// a signal), the connection takes it over and closes it once the message is built.
    case unixFD(Int32)
    /// `ay`, the common case of an array, kept as bytes.
    case bytes([UInt8])
    /// `a<element>`: `element` is the items' signature (so an empty array has a type).
    case array(element: String, [DBusValue])
    /// `{kv}`, only as an item of an array (a dictionary).
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])
    case variant(DBusValue)

    /// The value's type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictEntry(let k, let v): "{" + k.signature + v.signature + "}"
        case .structure(let items): "(" + items.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }
}

extension DBusValue {
    /// Every `unixFD` in these values (nested ones too).
    static func fileDescriptors(in values: [DBusValue]) -> [Int32] {
        var out: [Int32] = []
        func walk(_ v: DBusValue) {
            switch v {
            case .unixFD(let fd): out.append(fd)
            case .array(_, let items), .structure(let items): items.forEach(walk)
            case .dictEntry(let k, let v): walk(k); walk(v)
            case .variant(let v): walk(v)
            default: break
            }
        }
        values.forEach(walk)
        return out
    }

    /// `a{sv}` from names and values (sorted by name, so the bytes are the same every time).
    public static func properties(_ entries: [String: DBusValue]) -> DBusValue {
        .array(element: "{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    /// `as`.
    public static func strings(_ items: [String]) -> DBusValue { .array(element: "s", items.map { .string($0) }) }

    /// `ao`.
    public static func objectPaths(_ items: [String]) -> DBusValue { .array(element: "o", items.map { .objectPath($0) }) }

    /// What a variant holds (the value itself when it is none).
    public var unwrapped: DBusValue {
        if case .variant(let v) = self { return v.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .boolean(let b) = unwrapped { return b }
        return nil
    }

    /// Any integer that fits.
    public var integer: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): v <= UInt64(Int.max) ? Int(v) : nil
        default: nil
        }
    }

    /// `ay` (or an array of bytes read item by item).
    public var byteArray: [UInt8]? {
        switch unwrapped {
        case .bytes(let b): return b
        case .array("y", let items):
            var out: [UInt8] = []
            for case .byte(let b) in items { out.append(b) }
            return out.count == items.count ? out : nil
        default: return nil
        }
    }

    /// The items of an array (strings of `as`, paths of `ao`...).
    public var items: [DBusValue]? {
        switch unwrapped {
        case .array(_, let items): items
        case .bytes(let b): b.map { .byte($0) }
        default: nil
        }
    }

    /// A dictionary whose keys are strings or object paths (`a{sv}`, `a{oa{sa{sv}}}`...);
    /// nil for anything else.
    public var dictionary: [String: DBusValue]? {
        guard case .array(_, let items) = unwrapped else { return nil }
        var out: [String: DBusValue] = [:]
        for item in items {
            guard case .dictEntry(let k, let v) = item, let key = k.string else { return nil }
            out[key] = v
        }
        return out
    }
}
