#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import GattControlProtocol
import GattCore

/// Human-readable forms of gattd's replies and events.
enum Rendering {
    /// ```
    /// controller   powered_on
    /// advertising  yes
    /// address      AA:BB:CC:DD:EE:FF
    /// connections  1
    ///
    /// CENTRAL            TYPE    MTU  SECURITY  QUEUE  LINK                             SUBSCRIPTIONS
    /// 11:22:33:44:55:66  random  247  medium        0  30ms/0/4000ms 2M/2M 251/251B     hr_measurement (notify)
    /// ```
    /// One central's link in a column: interval/latency/timeout, tx/rx PHY, tx/rx data
    /// length in octets (`30ms/0/4000ms 2M/2M 251/251B`); `?` where unknown, `-` when nothing is.
    static func link(_ l: LinkParameters) -> String {
        func v<T>(_ x: T?, _ f: (T) -> String) -> String { x.map(f) ?? "?" }
        var parts: [String] = []
        if l.connectionInterval != nil || l.peripheralLatency != nil || l.supervisionTimeout != nil {
            parts.append("\(v(l.intervalMilliseconds) { LinkParameters.milliseconds($0) + "ms" })/\(v(l.peripheralLatency) { String($0) })/\(v(l.timeoutMilliseconds) { "\($0)ms" })")
        }
        if l.txPHY != nil || l.rxPHY != nil {
            parts.append("\(v(l.txPHY) { $0.configName.uppercased() })/\(v(l.rxPHY) { $0.configName.uppercased() })")
        }
        if l.maxTxOctets != nil || l.maxRxOctets != nil {
            parts.append("\(v(l.maxTxOctets) { String($0) })/\(v(l.maxRxOctets) { String($0) })B")
        }
        return parts.isEmpty ? "-" : parts.joined(separator: " ")
    }

    static func statusTable(_ status: ControlStatus) -> String {
        // A gattd that does not report the controller's state leaves the line out.
        var out = status.state == .unknown ? "" : "controller   \(status.state.rawValue)\n"
        if let c = status.controller { out += hardware(c) }
        out += "advertising  \(status.advertising ? "yes" : "no")\n"
        out += "address      \(status.address)\n"
        out += "connections  \(status.connections.count)\n"
        out += advertisingPayloads(status)
        out += otherSets(status)
        guard !status.connections.isEmpty else { return out }

        var rows: [[String]] = [["CENTRAL", "TYPE", "MTU", "SECURITY", "QUEUE", "LINK", "SUBSCRIPTIONS"]]
        for c in status.connections {
            let subscriptions = c.subscriptions.map { s -> String in
                let kinds = [s.notify ? "notify" : nil, s.indicate ? "indicate" : nil].compactMap { $0 }
                return "\(s.characteristic) (\(kinds.isEmpty ? "off" : kinds.joined(separator: ", ")))"
            }
            rows.append([
                c.identity.map { "\(c.address) (bonded \($0))" } ?? c.address.description,
                c.addressType.rawValue & 0x01 == 0 ? "public" : "random",
                String(c.mtu),
                c.security.description,
                String(c.queue),
                link(c.link),
                subscriptions.isEmpty ? "-" : subscriptions.joined(separator: ", "),
            ])
        }
        let rightAligned: Set<Int> = [2, 4]
        var widths = [Int](repeating: 0, count: 7)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        out += "\n"
        for row in rows {
            var cells: [String] = []
            for (i, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                if i == row.count - 1 {
                    cells.append(cell)
                } else {
                    cells.append(rightAligned.contains(i) ? pad + cell : cell + pad)
                }
            }
            out += cells.joined(separator: "  ") + "\n"
        }
        return out
    }

    /// What the controller is and can do, as gattd logged it when it came up:
    /// ```
    /// hardware     Bluetooth 5.2, Nordic Semiconductor (89); LE ACL 251 bytes x 4
    /// le features  LE Encryption, Data Length Extension, LE 2M PHY, Extended Advertising
    /// sets         up to 4 on the air at once, 1650 bytes of data per set (extended advertising ...)
    /// ```
    static func hardware(_ c: ControlStatus.Controller) -> String {
        let version = c.coreVersion.map { "Bluetooth \($0)" } ?? "unknown version"
        var maker = ""
        if let name = c.manufacturer, let id = c.companyID { maker = ", \(name) (\(id))" }
        let sets: String
        switch (c.maximumSets, c.setsTakeTurns) {
        case (let n?, false): sets = "up to \(n) on the air at once"
        case (let n?, true): sets = "up to \(n), taking turns on the air"
        case (nil, _): sets = "taking turns on the air"
        }
        // Through bluetoothd gattd knows no hardware details: how it reaches the controller instead.
        let reached = c.coreVersion == nil ? c.summary.map { "via          \($0)\n" } : nil
        return (reached ?? "hardware     \(version)\(maker); LE ACL \(c.aclDataPacketLength) bytes x \(c.totalACLDataPackets)\n")
            + "le features  \(c.leFeatures.isEmpty ? "none" : c.leFeatures.joined(separator: ", "))\n"
            + "sets         \(sets), \(c.maximumDataLength) bytes of data per set (\(c.advertising))\n"
    }

    /// The advertising data and scan response as gattd sends them, hex and decoded (as
    /// `gattd --check-config` prints them); nothing when gattd does not report them.
    static func advertisingPayloads(_ status: ControlStatus) -> String {
        guard !status.advertisingData.isEmpty else { return "" }
        var lines = AdvertisingDataStructure.describe(payload: status.advertisingData, title: "advertising data")
        if let response = status.scanResponse {
            lines += AdvertisingDataStructure.describe(payload: response, title: "scan response")
        } else {
            lines.append("scan response: none (the advertisement is not scannable)")
        }
        return "\n" + lines.map { $0 + "\n" }.joined()
    }

    /// The config's `advertising_sets` (the primary set is shown above): one heading each —
    /// id, on or off, legacy or extended with PHYs, connectable/scannable — and its payloads decoded.
    static func otherSets(_ status: ControlStatus) -> String {
        var lines: [String] = []
        for set in status.sets where set.id != AdvertisingSet.primaryID {
            let kind = [set.connectable ? "connectable" : "non-connectable", set.scannable ? "scannable" : nil].compactMap { $0 }.joined(separator: ", ")
            lines.append("")
            lines.append("set \(set.id): \(set.advertising ? "advertising" : "off"), \(set.pdus), \(kind)" + (set.address.map { ", from \($0)" } ?? ""))
            lines += AdvertisingDataStructure.describe(payload: set.advertisingData, title: "advertising data")
            if set.scannable { lines += AdvertisingDataStructure.describe(payload: set.scanResponse, title: "scan response") }
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// `10:00:00.123 written central=11:22:33:44:55:66 characteristic=label value=4869 "Hi"`
    /// (known keys first, the rest sorted). `time` is `now()`.
    static func line(_ message: ControlMessage, at time: String) -> String {
        let json: JSONText
        switch message {
        case .event(let e): json = e.json
        case .unknownEvent(_, let j): json = j
        case .reply(let r, let id): json = r.json(id: id)
        }
        guard case .object(let members) = json else { return time + " " + scalar(json) }
        let order = ["central", "characteristic", "request", "mtu", "notify", "indicate", "offset", "reason", "value"]
        var fields: [String: JSONText] = [:]
        for (k, v) in members where fields[k] == nil { fields[k] = v }
        var parts = [time, fields["event"].map(scalar) ?? "?"]
        let others = fields.keys.filter { $0 != "event" && !order.contains($0) }.sorted()
        for key in order + others {
            guard let v = fields[key] else { continue }
            parts.append(key == "value" ? "value=\(value(v))" : "\(key)=\(scalar(v))")
        }
        return parts.joined(separator: " ")
    }

    /// A value object as hex, followed by the text in quotes when it is printable ASCII.
    static func value(_ v: JSONText) -> String {
        guard case .object(let m) = v, m.count == 1, case .string(let text) = m[0].1,
            let encoding = AttributeValueLiteral.Encoding(rawValue: m[0].0),
            let bytes = try? AttributeValueLiteral.decode(text, as: encoding)
        else { return scalar(v) }
        let hex = AttributeValueLiteral.hexString(bytes)
        if !bytes.isEmpty, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) {
            return "\(hex) \"\(String(decoding: bytes, as: UTF8.self))\""
        }
        return hex.isEmpty ? "\"\"" : hex
    }

    /// Strings bare, numbers as written, anything else as JSON (keys sorted).
    static func scalar(_ v: JSONText) -> String {
        switch v {
        case .string(let s): s
        case .rawNumber(let n): n
        default: sortedKeys(v).text
        }
    }

    /// The same JSON with every object's members sorted by key (`status --json`).
    static func sortedKeys(_ v: JSONText) -> JSONText {
        switch v {
        case .array(let items): .array(items.map(sortedKeys))
        case .object(let members): .object(members.map { ($0.0, sortedKeys($0.1)) }.sorted { $0.0 < $1.0 })
        default: v
        }
    }

    /// The local time as `HH:mm:ss.SSS`.
    static func now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var seconds = ts.tv_sec
        var t = tm()
        localtime_r(&seconds, &t)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let ms = Int(ts.tv_nsec) / 1_000_000
        let millis = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)).\(millis)"
    }
}
