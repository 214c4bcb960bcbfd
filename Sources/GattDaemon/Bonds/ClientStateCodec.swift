import GattCore

/// A bonded client's GATT state file (`<state-dir>/bonds/<address>.gatt`), one compact JSON
/// object (hex as on the air):
///
/// ```json
/// {"version":1,"database_hash":"…","client_features":"01","service_changed":[18,65535],
///  "cccd":{"id:hr":1,"uuid:2A05#0":2}}
/// ```
/// `service_changed` (a Service Changed still owed) is left out when none is. The database
/// layout file (`<state-dir>/bonds/database.gatt`) keeps the last served services:
/// `{"version":1,"services":[[1,5,"<digest>"],…]}`. Decoding is strict: a file that does
/// not match is invalid as a whole.
enum ClientStateCodec {
    static let version = 1

    static func encode(_ s: GATTClientState) -> [UInt8] {
        var fields = [
            "\"version\":\(version)", "\"database_hash\":\"\(BondCodec.hex(s.databaseHash))\"",
            "\"client_features\":\"\(BondCodec.hex(s.clientFeatures))\"",
        ]
        if let r = s.serviceChangedOwed { fields.append("\"service_changed\":[\(r.start),\(r.end)]") }
        let cccd = s.clientConfigurations.sorted { $0.key < $1.key }.map { "\(quoted($0.key)):\($0.value)" }
        fields.append("\"cccd\":{" + cccd.joined(separator: ",") + "}")
        return Array(("{" + fields.joined(separator: ",") + "}\n").utf8)
    }

    static func decode(_ bytes: [UInt8]) -> GATTClientState? {
        guard let m = members(bytes), StateJSON.unsigned(m["version"]) == UInt64(version),
            let hash = StateJSON.string(m["database_hash"]).flatMap(BondCodec.unhex),
            let features = StateJSON.string(m["client_features"]).flatMap(BondCodec.unhex), !features.isEmpty, features.count <= 16,
            case .object(let entries)? = m["cccd"]
        else { return nil }
        var cccd: [String: UInt16] = [:]
        for e in entries {
            guard let bits = StateJSON.unsigned(e.value.kind), bits <= 0x0003 else { return nil }
            cccd[e.key] = UInt16(bits)
        }
        var owed: HandleRange?
        if let v = m["service_changed"] {
            guard case .array(let a) = v, a.count == 2, let s = StateJSON.unsigned(a[0].kind), let e = StateJSON.unsigned(a[1].kind),
                (1...0xFFFF).contains(s), (1...0xFFFF).contains(e), s <= e
            else { return nil }
            owed = HandleRange(start: UInt16(s), end: UInt16(e))
        }
        return GATTClientState(clientConfigurations: cccd, clientFeatures: features, databaseHash: hash, serviceChangedOwed: owed)
    }

    static func encodeLayout(_ services: [ServiceFingerprint]) -> [UInt8] {
        let list = services.map { "[\($0.start),\($0.end),\"\(BondCodec.hex($0.digest))\"]" }
        return Array(("{\"version\":\(version),\"services\":[" + list.joined(separator: ",") + "]}\n").utf8)
    }

    static func decodeLayout(_ bytes: [UInt8]) -> [ServiceFingerprint]? {
        guard let m = members(bytes), StateJSON.unsigned(m["version"]) == UInt64(version), case .array(let list)? = m["services"] else { return nil }
        var out: [ServiceFingerprint] = []
        for item in list {
            guard case .array(let a) = item.kind, a.count == 3, let s = StateJSON.unsigned(a[0].kind), let e = StateJSON.unsigned(a[1].kind),
                s <= 0xFFFF, e <= 0xFFFF, let d = StateJSON.string(a[2].kind).flatMap(BondCodec.unhex)
            else { return nil }
            out.append(ServiceFingerprint(start: UInt16(s), end: UInt16(e), digest: d))
        }
        return out
    }

    private static func members(_ bytes: [UInt8]) -> [String: JSONValue.Kind]? {
        guard let root = try? JSONParser.parse(bytes), case .object(let members) = root.kind else { return nil }
        var m: [String: JSONValue.Kind] = [:]
        for member in members { m[member.key] = member.value.kind }
        return m
    }

    /// A JSON string literal (keys are config ids or UUIDs), escaped as the control protocol's.
    static func quoted(_ s: String) -> String { JSONText.string(s).text }
}
