#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

struct AdvertisingParser {
    let reader: ConfigReader
    static let keys = [
        "local_name", "service_uuids", "manufacturer_data", "service_data", "tx_power", "appearance", "ibeacon",
        "interval_ms", "connectable", "scannable", "own_address_type", "rpa_timeout_s", "max_connections",
    ]

    /// `advertising` (`set` false) or an `advertising_sets` element (`set` true: the keys of
    /// `advertising` but the global ones, plus `setKeys`, parsed by `parseSets`) at `path`.
    @discardableResult
    func parse(_ v: JSONValue, at path: String, set: Bool, into adv: inout AdvertisingConfiguration, appearance: UInt16) -> ConfigReader.Object? {
        let r = reader
        let keys = set ? Self.keys.filter { Self.globalKeys[$0] == nil } + Self.setKeys : Self.keys
        guard let o = r.object(v, at: path, keys: keys, required: set ? ["id"] : [], misplaced: set ? Self.globalKeys : Self.setOnlyKeys) else {
            return nil
        }
        if let v = o.value("local_name"), let s = r.string(v, at: o.path("local_name")) {
            if s.isEmpty {
                r.error(o.path("local_name"), "must not be empty; leave \"local_name\" out to advertise the top-level \"name\"", at: v.offset)
            } else if s.utf8.count > 248 {
                r.error(o.path("local_name"), "is \(s.utf8.count) bytes; a local name holds at most 248 bytes of UTF-8", at: v.offset)
            } else {
                adv.localName = s
            }
        }
        if let v = o.value("service_uuids"), let list = r.array(v, at: o.path("service_uuids")) {
            var seen: [BluetoothUUID: Int] = [:]
            for (i, e) in list.enumerated() {
                let p = ConfigReader.element(o.path("service_uuids"), i)
                guard let u = r.uuid(e, at: p) else { continue }
                if let first = seen[u] {
                    r.error(p, "\(u) is already listed at \(ConfigReader.element(o.path("service_uuids"), first))", at: e.offset)
                } else {
                    seen[u] = i
                    adv.serviceUUIDs.append(u)
                }
            }
        }
        if let v = o.value("manufacturer_data") { adv.manufacturerData = parseManufacturerData(v, at: o.path("manufacturer_data")) }
        if let v = o.value("service_data") { adv.serviceData = parseServiceData(v, at: o.path("service_data")) }
        if let v = o.value("tx_power"), let n = r.integer(v, at: o.path("tx_power"), in: -127...20, unit: " dBm") {
            adv.txPower = Int8(n)
        }
        if let v = o.value("appearance"), let b = r.bool(v, at: o.path("appearance")) {
            adv.appearance = b ? appearance : nil
        }
        if let v = o.value("ibeacon") { adv.iBeacon = parseIBeacon(v, path: o.path("ibeacon")) }
        if let v = o.value("interval_ms"), let pair = range(v, at: o.path("interval_ms"), in: 20...10240) {
            adv.intervalMs = .init(min: pair.min, max: pair.max)
        }
        if let v = o.value("connectable"), let b = r.bool(v, at: o.path("connectable")) { adv.connectable = b }
        if let v = o.value("scannable"), let b = r.bool(v, at: o.path("scannable")) { adv.scannable = b }
        if set { return o }
        if let v = o.value("own_address_type"),
            let s = r.choice(v, at: o.path("own_address_type"), ["public", "random", "rpa"], what: "an address type"),
            let t = AdvertisingConfiguration.OwnAddressType(rawValue: s)
        {
            adv.ownAddressType = t
        }
        // Vol 4 Part E §7.8.45: an RPA timeout of 1 s to 1 hour.
        if let v = o.value("rpa_timeout_s"), let n = r.integer(v, at: o.path("rpa_timeout_s"), in: 1...3600, unit: " s") {
            adv.rpaTimeout = .seconds(n)
        }
        if let v = o.value("max_connections"), let n = r.integer(v, at: o.path("max_connections"), in: 1...0xFFFF) {
            adv.maxConnections = n
        }
        return o
    }

    /// `manufacturer_data`: `[{"company_id": 0...65535, "data": VALUE}]` (also the control op
    /// `advertising_data`'s member).
    func parseManufacturerData(_ v: JSONValue, at path: String) -> [AdvertisingConfiguration.ManufacturerData] {
        let r = reader
        guard let list = r.array(v, at: path) else { return [] }
        var out: [AdvertisingConfiguration.ManufacturerData] = []
        for (i, e) in list.enumerated() {
            let p = ConfigReader.element(path, i)
            guard let m = r.object(e, at: p, keys: ["company_id", "data"], required: ["company_id", "data"]) else { continue }
            let company = m.value("company_id").flatMap { r.integer($0, at: m.path("company_id"), in: 0...0xFFFF) }
            let data = m.value("data").flatMap { r.bytes($0, at: m.path("data")) }
            if let company, let data { out.append(.init(companyID: UInt16(company), data: data)) }
        }
        return out
    }

    /// `service_data`: `[{"uuid": UUID, "data": VALUE}]` (also the control op `advertising_data`'s member).
    func parseServiceData(_ v: JSONValue, at path: String) -> [AdvertisingConfiguration.ServiceData] {
        let r = reader
        guard let list = r.array(v, at: path) else { return [] }
        var out: [AdvertisingConfiguration.ServiceData] = []
        for (i, e) in list.enumerated() {
            let p = ConfigReader.element(path, i)
            guard let m = r.object(e, at: p, keys: ["uuid", "data"], required: ["uuid", "data"]) else { continue }
            let uuid = m.value("uuid").flatMap { r.uuid($0, at: m.path("uuid")) }
            let data = m.value("data").flatMap { r.bytes($0, at: m.path("data")) }
            if let uuid, let data { out.append(.init(uuid: uuid, data: data)) }
        }
        return out
    }

    func parseIBeacon(_ v: JSONValue, path: String) -> AdvertisingConfiguration.IBeacon? {
        let r = reader
        guard let o = r.object(v, at: path, keys: ["uuid", "major", "minor", "measured_power"], required: ["uuid", "major", "minor"]) else { return nil }
        var uuid: BluetoothUUID?
        if let v = o.value("uuid"), let u = r.uuid(v, at: o.path("uuid")) {
            if case .string(let s) = v.kind, s.count != 36 {
                r.error(o.path("uuid"), "an iBeacon proximity UUID must be written in full (36 characters, e.g. \"e2c56db5-dffb-48d2-b060-d0f5a71096e0\")", at: v.offset)
            } else {
                uuid = u
            }
        }
        let major = o.value("major").flatMap { r.integer($0, at: o.path("major"), in: 0...0xFFFF) }
        let minor = o.value("minor").flatMap { r.integer($0, at: o.path("minor"), in: 0...0xFFFF) }
        var power = -59
        if let v = o.value("measured_power") {
            guard let n = r.integer(v, at: o.path("measured_power"), in: -128...127, unit: " dBm") else { return nil }
            power = n
        }
        guard let uuid, let major, let minor else { return nil }
        return .init(uuid: uuid, major: UInt16(major), minor: UInt16(minor), measuredPower: Int8(power))
    }

    /// `[min, max]` in milliseconds, both in `limits`, min ≤ max.
    func range(_ v: JSONValue, at path: String, in limits: ClosedRange<Double>) -> (min: Double, max: Double)? {
        let r = reader
        guard let list = r.array(v, at: path) else { return nil }
        guard list.count == 2 else {
            r.error(path, "expected [minimum, maximum] (2 numbers), got \(list.count) element\(list.count == 1 ? "" : "s")", at: v.offset)
            return nil
        }
        let lo = r.number(list[0], at: ConfigReader.element(path, 0), in: limits, unit: " ms")
        let hi = r.number(list[1], at: ConfigReader.element(path, 1), in: limits, unit: " ms")
        guard let lo, let hi else { return nil }
        if lo > hi {
            r.error(path, "minimum \(ConfigReader.format(lo)) ms is greater than maximum \(ConfigReader.format(hi)) ms", at: v.offset)
            return nil
        }
        return (lo, hi)
    }

    /// `connection`: `{"preferred": {"interval_ms": [min, max], "latency": N, "timeout_ms": N}}`.
    /// `connection.data_length_and_phy` (default true): whether each new connection is asked
    /// for the maximum data length and the 2M PHY (when the controller supports them).
    func parseDataLengthAndPHY(_ v: JSONValue) -> Bool {
        guard let o = reader.object(v, at: "connection", keys: ["preferred", "data_length_and_phy"]),
            let b = o.value("data_length_and_phy")
        else { return true }
        return reader.bool(b, at: o.path("data_length_and_phy")) ?? true
    }

    /// `phy`: `{"preferred": ["2m", "1m"]}`: the PHYs each new connection is asked for
    /// (`"1m"`, `"2m"`, `"coded"`; at least one, each once).
    func parsePHY(_ v: JSONValue) -> [LEPHY]? {
        let r = reader
        guard let o = r.object(v, at: "phy", keys: ["preferred"], required: ["preferred"]), let pv = o.value("preferred"),
            let list = r.array(pv, at: o.path("preferred"))
        else { return nil }
        let path = o.path("preferred")
        guard !list.isEmpty else {
            r.error(path, "expected at least one PHY (\"1m\", \"2m\", \"coded\")", at: pv.offset)
            return nil
        }
        var phys: [LEPHY] = []
        for (i, item) in list.enumerated() {
            guard let name = r.string(item, at: "\(path)[\(i)]") else { return nil }
            guard let phy = LEPHY(configName: name) else {
                r.error("\(path)[\(i)]", "expected \"1m\", \"2m\" or \"coded\", got \"\(name)\"", at: item.offset)
                return nil
            }
            guard !phys.contains(phy) else {
                r.error("\(path)[\(i)]", "\"\(name)\" is listed twice", at: item.offset)
                return nil
            }
            phys.append(phy)
        }
        return phys
    }

    func parseConnection(_ v: JSONValue) -> PreferredConnectionParameters? {
        let r = reader
        guard let o = r.object(v, at: "connection", keys: ["preferred", "data_length_and_phy"]), let pv = o.value("preferred") else { return nil }
        guard let p = r.object(pv, at: o.path("preferred"), keys: ["interval_ms", "latency", "timeout_ms"], required: ["interval_ms", "latency", "timeout_ms"]) else {
            return nil
        }
        // Core Spec Vol 4 Part E §7.8.12: interval 7.5 ms...4 s, latency 0...499, timeout 100 ms...32 s.
        let interval = p.value("interval_ms").flatMap { range($0, at: p.path("interval_ms"), in: 7.5...4000) }
        let latency = p.value("latency").flatMap { r.integer($0, at: p.path("latency"), in: 0...499, unit: " connection events") }
        let timeout = p.value("timeout_ms").flatMap { r.integer($0, at: p.path("timeout_ms"), in: 100...32000, unit: " ms") }
        guard let interval, let latency, let timeout else { return nil }
        return PreferredConnectionParameters(intervalMinMs: interval.min, intervalMaxMs: interval.max, latency: UInt16(latency), timeoutMs: timeout)
    }
}
