import GattCore

/// The bytes of the state directory's two files, read with the strict `JSONParser`.
///
/// `values.json`, the snapshot (written whole, atomically, at compaction):
///
/// ```json
/// {
///   "version": 1,
///   "generation": 3,
///   "values": {
///     "device_label": {"hex": "4b69746368656e"}
///   }
/// }
/// ```
///
/// `values.log`, the changes since that snapshot, one line per commit (group commit: one
/// line may carry several keys, one value each, sorted by key), appended and fdatasync'ed:
///
/// ```
/// {"crc32":"1c291ca3","generation":3,"values":{"device_label":{"hex":"4b"}}}
/// ```
///
/// The CRC-32 (IEEE) covers the bytes from `"generation"` up to the line's final `}`.
/// A line is applied only when it is complete (ends in a newline), its CRC matches and its
/// generation is the snapshot's (older lines are left over from an interrupted compaction).
/// Reading stops at the first line that is not complete and intact: a torn tail.
enum StateFileFormat {
    static let version = 1

    struct FormatError: Error, Equatable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    // MARK: Snapshot

    /// Pretty, keys sorted, lowercase hex, trailing newline.
    static func snapshot(_ values: [String: [UInt8]], generation: UInt64) -> [UInt8] {
        var text = "{\n  \"version\": \(version),\n  \"generation\": \(generation),\n  \"values\": {"
        let keys = values.keys.sorted()
        for (i, key) in keys.enumerated() {
            text += i == 0 ? "\n" : ",\n"
            text += "    \(JSONText.string(key).text): {\"hex\": \"\(AttributeValueLiteral.hexString(values[key] ?? []))\"}"
        }
        text += keys.isEmpty ? "}\n}\n" : "\n  }\n}\n"
        return Array(text.utf8)
    }

    /// A parsed snapshot: values, generation (0 when absent), and skipped entries.
    struct Snapshot: Equatable {
        var values: [String: [UInt8]]
        var generation: UInt64
        var problems: [String]
    }

    /// Failure means the file as a whole is unusable; a bad entry is skipped and reported.
    static func parseSnapshot(_ bytes: [UInt8]) -> Result<Snapshot, FormatError> {
        guard !bytes.isEmpty else { return .failure(FormatError("the file is empty")) }
        guard let root = try? JSONParser.parse(bytes) else { return .failure(FormatError("not valid JSON")) }
        guard case .object(let members) = root.kind else { return .failure(FormatError("the top level is not an object")) }
        let f = fields(members)
        guard let v = f["version"] else { return .failure(FormatError("\"version\" is missing")) }
        guard case .number(let n) = v.kind, let version = Int(n) else {
            return .failure(FormatError("\"version\" is not an integer"))
        }
        guard version == Self.version else {
            return .failure(FormatError("unsupported version \(version), expected \(Self.version)"))
        }
        var generation: UInt64 = 0
        if let g = f["generation"] {
            guard case .number(let n) = g.kind, let value = UInt64(n) else {
                return .failure(FormatError("\"generation\" is not a non-negative integer"))
            }
            generation = value
        }
        guard let entries = f["values"], case .object(let list) = entries.kind else {
            return .failure(FormatError("\"values\" is missing or not an object"))
        }
        var values: [String: [UInt8]] = [:]
        var problems: [String] = []
        for m in list.sorted(by: { $0.key < $1.key }) {
            switch literal(m.value) {
            case .success(let bytes): values[m.key] = bytes
            case .failure(let e): problems.append("values.\(m.key): \(e.message); ignored")
            }
        }
        return .success(Snapshot(values: values, generation: generation, problems: problems))
    }

    // MARK: Log

    /// One log line (with its newline) recording `changes` in `generation`.
    static func logRecord(_ changes: [String: [UInt8]], generation: UInt64) -> [UInt8] {
        var body = "\"generation\":\(generation),\"values\":{"
        for (i, key) in changes.keys.sorted().enumerated() {
            if i > 0 { body += "," }
            body += "\(JSONText.string(key).text):{\"hex\":\"\(AttributeValueLiteral.hexString(changes[key] ?? []))\"}"
        }
        body += "}"
        let bodyBytes = Array(body.utf8)
        return Array("{\"crc32\":\"\(hex8(CRC32.checksum(bodyBytes)))\",".utf8) + bodyBytes + Array("}\n".utf8)
    }

    /// What replaying a log gives.
    struct Replay: Equatable {
        /// Changes of `generation`'s lines, in order (later ones win).
        var changes: [(key: String, value: [UInt8])]
        /// Bytes up to the end of the last intact line (of any generation): where to append.
        var intactLength: Int
        /// Lines of another generation skipped.
        var staleLines: Int

        static func == (a: Replay, b: Replay) -> Bool {
            a.intactLength == b.intactLength && a.staleLines == b.staleLines
                && a.changes.map(\.key) == b.changes.map(\.key) && a.changes.map(\.value) == b.changes.map(\.value)
        }
    }

    static func replay(_ bytes: [UInt8], generation: UInt64) -> Replay {
        var r = Replay(changes: [], intactLength: 0, staleLines: 0)
        var start = 0
        while start < bytes.count {
            guard let newline = bytes[start...].firstIndex(of: 0x0A) else { break }
            guard let (g, changes) = parseRecord(Array(bytes[start..<newline])) else { break }
            if g == generation { r.changes += changes } else { r.staleLines += 1 }
            start = newline + 1
            r.intactLength = start
        }
        return r
    }

    private static let recordPrefix = Array("{\"crc32\":\"".utf8)

    /// A line without its newline: nil when torn, corrupt or malformed.
    static func parseRecord(_ line: [UInt8]) -> (UInt64, [(key: String, value: [UInt8])])? {
        let p = recordPrefix.count
        guard line.count > p + 11, Array(line[0..<p]) == recordPrefix, line[p + 8] == 0x22, line[p + 9] == 0x2C,
            line.last == 0x7D, let crc = UInt32(String(decoding: line[p..<(p + 8)], as: UTF8.self), radix: 16),
            CRC32.checksum(line[(p + 10)..<(line.count - 1)]) == crc,
            let root = try? JSONParser.parse(line), case .object(let members) = root.kind
        else { return nil }
        let f = fields(members)
        guard let g = f["generation"], case .number(let n) = g.kind, let generation = UInt64(n),
            let v = f["values"], case .object(let list) = v.kind
        else { return nil }
        var changes: [(key: String, value: [UInt8])] = []
        for m in list {
            guard case .success(let bytes) = literal(m.value) else { return nil }
            changes.append((m.key, bytes))
        }
        return (generation, changes)
    }

    // MARK: Helpers

    private static func fields(_ members: [JSONMember]) -> [String: JSONValue] {
        var f: [String: JSONValue] = [:]
        for m in members where f[m.key] == nil { f[m.key] = m.value }
        return f
    }

    /// `{"hex": "..."}` (or `utf8`/`base64`).
    private static func literal(_ v: JSONValue) -> Result<[UInt8], FormatError> {
        guard case .object(let members) = v.kind, members.count == 1, let m = members.first,
            let encoding = AttributeValueLiteral.Encoding(rawValue: m.key), case .string(let text) = m.value.kind
        else { return .failure(FormatError("expected {\"hex\": \"...\"}")) }
        do {
            return .success(try AttributeValueLiteral.decode(text, as: encoding))
        } catch {
            return .failure(FormatError(error.message))
        }
    }

    static func hex8(_ n: UInt32) -> String {
        let h = String(n, radix: 16)
        return String(repeating: "0", count: 8 - h.count) + h
    }
}

/// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
