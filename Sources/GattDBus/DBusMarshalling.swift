import CSystemdBus

#if canImport(Glibc)
import Glibc
#endif

/// Writes and reads `DBusValue`s into and out of an sd-bus message, one value at a time with
/// sd-bus's typed calls (it checks and encodes; nothing here knows the wire format). Used on
/// the bus thread only, like every sd-bus object.
enum DBusMarshalling {
    static func code(_ c: Character) -> CChar { CChar(bitPattern: c.asciiValue!) }

    static func append(_ values: [DBusValue], to m: OpaquePointer) throws(DBusError) {
        for v in values { try append(v, to: m) }
    }

    static func append(_ value: DBusValue, to m: OpaquePointer) throws(DBusError) {
        let r: Int32
        switch value {
        case .byte(var v): r = sd_bus_message_append_basic(m, code("y"), &v)
        case .boolean(let b):
            var v: Int32 = b ? 1 : 0
            r = sd_bus_message_append_basic(m, code("b"), &v)
        case .int16(var v): r = sd_bus_message_append_basic(m, code("n"), &v)
        case .uint16(var v): r = sd_bus_message_append_basic(m, code("q"), &v)
        case .int32(var v): r = sd_bus_message_append_basic(m, code("i"), &v)
        case .uint32(var v): r = sd_bus_message_append_basic(m, code("u"), &v)
        case .int64(var v): r = sd_bus_message_append_basic(m, code("x"), &v)
        case .uint64(var v): r = sd_bus_message_append_basic(m, code("t"), &v)
        case .double(var v): r = sd_bus_message_append_basic(m, code("d"), &v)
        case .unixFD(var v): r = sd_bus_message_append_basic(m, code("h"), &v)
        // String types: the pointer is the string itself (sd_bus_message_append_basic(3)).
        case .string(let s): r = s.withCString { sd_bus_message_append_basic(m, code("s"), $0) }
        case .objectPath(let s): r = s.withCString { sd_bus_message_append_basic(m, code("o"), $0) }
        case .signature(let s): r = s.withCString { sd_bus_message_append_basic(m, code("g"), $0) }
        case .bytes(let b): r = b.withUnsafeBytes { sd_bus_message_append_array(m, code("y"), $0.baseAddress, $0.count) }
        case .array(let element, let items):
            try container(m, "a", element) { () throws(DBusError) in try append(items, to: m) }
            return
        case .dictEntry(let k, let v):
            try container(m, "e", k.signature + v.signature) { () throws(DBusError) in try append([k, v], to: m) }
            return
        case .structure(let items):
            try container(m, "r", items.map(\.signature).joined()) { () throws(DBusError) in try append(items, to: m) }
            return
        case .variant(let inner):
            try container(m, "v", inner.signature) { () throws(DBusError) in try append(inner, to: m) }
            return
        }
        if r < 0 { throw DBusError(errno: -r, "appending \(value.signature)") }
    }

    private static func container(_ m: OpaquePointer, _ type: Character, _ contents: String, _ body: () throws(DBusError) -> Void) throws(DBusError) {
        let r = contents.withCString { sd_bus_message_open_container(m, code(type), $0) }
        if r < 0 { throw DBusError(errno: -r, "opening \(type)\(contents)") }
        try body()
        let c = sd_bus_message_close_container(m)
        if c < 0 { throw DBusError(errno: -c, "closing \(type)\(contents)") }
    }

    /// Every value left in the message (at its top level, or in the container entered).
    static func readAll(_ m: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var out: [DBusValue] = []
        while let v = try readNext(m) { out.append(v) }
        return out
    }

    static func readNext(_ m: OpaquePointer) throws(DBusError) -> DBusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let p = sd_bus_message_peek_type(m, &type, &contents)
        if p < 0 { throw DBusError(errno: -p, "reading a message") }
        if p == 0 { return nil }
        let inner = contents.map { String(cString: $0) } ?? ""
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "a") where inner == "y":
            var ptr: UnsafeRawPointer?
            var size = 0
            let r = sd_bus_message_read_array(m, code("y"), &ptr, &size)
            if r < 0 { throw DBusError(errno: -r, "reading ay") }
            guard let ptr, size > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeRawBufferPointer(start: ptr, count: size)))
        case UInt8(ascii: "a"):
            return .array(element: inner, try entered(m, "a", inner) { () throws(DBusError) in try readAll(m) })
        case UInt8(ascii: "e"):
            let kv = try entered(m, "e", inner) { () throws(DBusError) in try readAll(m) }
            guard kv.count == 2 else { throw DBusError.invalidArgs("a dictionary entry of \(kv.count) values") }
            return .dictEntry(kv[0], kv[1])
        case UInt8(ascii: "r"):
            return .structure(try entered(m, "r", inner) { () throws(DBusError) in try readAll(m) })
        case UInt8(ascii: "v"):
            let v = try entered(m, "v", inner) { () throws(DBusError) in try readAll(m) }
            guard let first = v.first, v.count == 1 else { throw DBusError.invalidArgs("an empty variant") }
            return .variant(first)
        default:
            return try readBasic(m, type)
        }
    }

    private static func entered(_ m: OpaquePointer, _ type: Character, _ contents: String, _ body: () throws(DBusError) -> [DBusValue]) throws(DBusError) -> [DBusValue] {
        let r = contents.withCString { sd_bus_message_enter_container(m, code(type), $0) }
        if r < 0 { throw DBusError(errno: -r, "entering \(type)\(contents)") }
        let values = try body()
        let x = sd_bus_message_exit_container(m)
        if x < 0 { throw DBusError(errno: -x, "leaving \(type)\(contents)") }
        return values
    }

    private static func readBasic(_ m: OpaquePointer, _ type: CChar) throws(DBusError) -> DBusValue {
        func read<T: BitwiseCopyable>(_ initial: T) throws(DBusError) -> T {
            var v = initial
            let r = withUnsafeMutableBytes(of: &v) { sd_bus_message_read_basic(m, type, $0.baseAddress) }
            if r < 0 { throw DBusError(errno: -r, "reading \(Character(UnicodeScalar(UInt8(bitPattern: type))))") }
            return v
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try read(UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try read(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try read(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try read(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try read(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try read(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try read(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try read(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try read(Double(0)))
        case UInt8(ascii: "h"):
            // The message owns its fd: keep a duplicate of our own.
            let fd = try read(Int32(-1))
            let own = fcntl(fd, F_DUPFD_CLOEXEC, 3)
            if own < 0 { throw DBusError(errno: errno, "duplicating a passed fd") }
            return .unixFD(own)
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let p = try read(UnsafePointer<CChar>?.none)
            let s = p.map { String(cString: $0) } ?? ""
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "o"): return .objectPath(s)
            case UInt8(ascii: "g"): return .signature(s)
            default: return .string(s)
            }
        default:
            throw DBusError.invalidArgs("a value of type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'")
        }
    }
}
