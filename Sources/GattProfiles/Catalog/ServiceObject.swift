import GattCore

/// Builds the service object a profile expands to: written as `JSONText`, read back as the
/// `JSONValue` the core's parser takes, every node at the profile entry's offset (so an error
/// the parser finds in it points at the entry).
enum ServiceObject {
    /// A characteristic object.
    static func characteristic(
        id: String, uuid: String, properties: [String], permissions: [String]? = nil, value: JSONText? = nil, maxLength: Int? = nil,
        userDescription: String? = nil
    ) -> JSONText {
        var m: [(String, JSONText)] = [("id", .string(id)), ("uuid", .string(uuid)), ("properties", .array(properties.map { .string($0) }))]
        if let permissions { m.append(("permissions", .array(permissions.map { .string($0) }))) }
        if let value { m.append(("value", value)) }
        if let maxLength { m.append(("max_length", .int(maxLength))) }
        if let userDescription { m.append(("user_description", .string(userDescription))) }
        return .object(m)
    }

    static func service(id: String, uuid: String, characteristics: [JSONText], at offset: Int) -> JSONValue {
        let text = JSONText.object([("id", .string(id)), ("uuid", .string(uuid)), ("characteristics", .array(characteristics))]).text
        // Our own text: it always parses.
        guard let v = try? JSONParser.parse(Array(text.utf8)) else { return JSONValue(.null, offset: offset) }
        return relocated(v, to: offset)
    }

    static func relocated(_ v: JSONValue, to offset: Int) -> JSONValue {
        switch v.kind {
        case .array(let items): return JSONValue(.array(items.map { relocated($0, to: offset) }), offset: offset)
        case .object(let members):
            return JSONValue(
                .object(members.map { JSONMember(key: $0.key, keyOffset: offset, value: relocated($0.value, to: offset)) }), offset: offset)
        default: return JSONValue(v.kind, offset: offset)
        }
    }
}

extension ConfigReader.Object {
    /// The entry's `"id"` (checked by the core's parser once expanded), or `fallback`.
    func profileID(default fallback: String, reader r: ConfigReader) -> String {
        guard let v = value("id") else { return fallback }
        return r.string(v, at: path("id")) ?? fallback
    }
}
