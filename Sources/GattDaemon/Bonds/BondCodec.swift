import GattCore

/// A bond file's JSON, one compact object (keys little-endian hex, as on the air):
///
/// ```json
/// {"version":1,"address":"00:1B:DC:01:02:03","address_type":0,"ltk":"…","ediv":0,"rand":0,
///  "key_size":16,"authenticated":false,"secure_connections":true,"peer_irk":"…","peer_csrk":"…",
///  "local_irk":"…","local_address":"…","local_address_type":1,"local_csrk":"…","peer_sign_counter":7,
///  "created":1790000000,"last_seen":1790000500}
/// ```
/// Optional keys are left out when absent. Decoding is strict: anything missing, of the
/// wrong type or out of range makes the whole file invalid.
enum BondCodec {
    static let version = 1

    static func encode(_ stored: StoredBond) -> [UInt8] {
        let b = stored.bond
        var fields: [String] = [
            "\"version\":\(version)", "\"address\":\"\(b.address)\"", "\"address_type\":\(b.addressType.rawValue)",
        ]
        if let ltk = b.longTermKey { fields.append("\"ltk\":\"\(hex(ltk))\"") }
        fields += [
            "\"ediv\":\(b.ediv)", "\"rand\":\(b.rand)", "\"key_size\":\(b.keySize)", "\"authenticated\":\(b.authenticated)",
            "\"secure_connections\":\(b.secureConnections)",
        ]
        if let k = b.peerIRK { fields.append("\"peer_irk\":\"\(hex(k))\"") }
        if let k = b.peerCSRK { fields.append("\"peer_csrk\":\"\(hex(k))\"") }
        if let id = b.localIdentity {
            fields += ["\"local_irk\":\"\(hex(id.irk))\"", "\"local_address\":\"\(id.address)\"", "\"local_address_type\":\(id.addressType.rawValue)"]
        }
        if let k = b.localCSRK { fields.append("\"local_csrk\":\"\(hex(k))\"") }
        if let n = stored.peerSignCounter { fields.append("\"peer_sign_counter\":\(n)") }
        fields.append("\"created\":\(stored.created)")
        if let t = stored.lastSeen { fields.append("\"last_seen\":\(t)") }
        return Array(("{" + fields.joined(separator: ",") + "}\n").utf8)
    }

    static func decode(_ bytes: [UInt8]) -> StoredBond? {
        guard let root = try? JSONParser.parse(bytes), case .object(let members) = root.kind else { return nil }
        var m: [String: JSONValue.Kind] = [:]
        for member in members { m[member.key] = member.value.kind }
        guard StateJSON.unsigned(m["version"]) == UInt64(version),
            let addressText = StateJSON.string(m["address"]), let address = BluetoothAddress(addressText),
            let type = StateJSON.unsigned(m["address_type"]), type <= 3,
            let ediv = StateJSON.unsigned(m["ediv"]), ediv <= 0xFFFF, let rand = StateJSON.unsigned(m["rand"]),
            let keySize = StateJSON.unsigned(m["key_size"]), (7...16).contains(keySize),
            case .bool(let authenticated)? = m["authenticated"], case .bool(let sc)? = m["secure_connections"],
            let created = StateJSON.unsigned(m["created"]), created <= UInt64(Int64.max)
        else { return nil }
        // Optional keys: absent is fine, present must be a 16-octet key.
        func key(_ name: String) -> [UInt8]?? {
            guard let v = m[name] else { return .some(nil) }
            guard let s = StateJSON.string(v), let k = unhex(s), k.count == 16 else { return nil }
            return .some(k)
        }
        var lastSeen: Int64?
        if let v = m["last_seen"] {
            guard let t = StateJSON.unsigned(v), t <= UInt64(Int64.max) else { return nil }
            lastSeen = Int64(t)
        }
        var signCounter: UInt32?
        if let v = m["peer_sign_counter"] {
            guard let n = StateJSON.unsigned(v), n <= UInt64(UInt32.max) else { return nil }
            signCounter = UInt32(n)
        }
        guard let ltk = key("ltk"), let peerIRK = key("peer_irk"), let peerCSRK = key("peer_csrk"),
            let localIRK = key("local_irk"), let localCSRK = key("local_csrk")
        else { return nil }
        var identity: SMPIdentity?
        if let localIRK {
            guard let a = StateJSON.string(m["local_address"]).flatMap(BluetoothAddress.init), let t = StateJSON.unsigned(m["local_address_type"]), t <= 3 else {
                return nil
            }
            identity = SMPIdentity(irk: localIRK, address: a, addressType: BluetoothAddressType(rawValue: UInt8(t)))
        }
        let bond = Bond(
            address: address, addressType: BluetoothAddressType(rawValue: UInt8(type)), longTermKey: ltk, ediv: UInt16(ediv),
            rand: rand, keySize: Int(keySize), authenticated: authenticated, secureConnections: sc, peerIRK: peerIRK,
            peerCSRK: peerCSRK, localIdentity: identity, localCSRK: localCSRK)
        return StoredBond(bond: bond, created: Int64(created), peerSignCounter: signCounter, lastSeen: lastSeen)
    }

    static func hex(_ bytes: [UInt8]) -> String { AttributeValueLiteral.hexString(bytes) }

    static func unhex(_ s: String) -> [UInt8]? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = nibble(digits[i]), let lo = nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Reading the state files' JSON members (bond and client-state files share them).
enum StateJSON {
    /// A non-negative integer member (nil: absent, not a number, or out of range).
    static func unsigned(_ k: JSONValue.Kind?) -> UInt64? {
        guard case .number(let text)? = k else { return nil }
        return UInt64(text)
    }

    static func string(_ k: JSONValue.Kind?) -> String? {
        guard case .string(let s)? = k else { return nil }
        return s
    }
}
