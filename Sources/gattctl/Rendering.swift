import Foundation
import GattCore

/// Human-readable forms of gattd's replies and events.
enum Rendering {
    /// ```
    /// advertising  yes
    /// address      AA:BB:CC:DD:EE:FF
    /// connections  1
    ///
    /// CENTRAL            TYPE    MTU  SECURITY  QUEUE  SUBSCRIPTIONS
    /// 11:22:33:44:55:66  random  247  medium        0  hr_measurement (notify)
    /// ```
    static func statusTable(_ reply: JSONObject) -> String {
        let advertising = (reply["advertising"] as? Bool).map { $0 ? "yes" : "no" } ?? "?"
        let connections = reply["connections"] as? [JSONObject] ?? []
        var out = "advertising  \(advertising)\n"
        out += "address      \(reply["address"] as? String ?? "?")\n"
        out += "connections  \(connections.count)\n"
        guard !connections.isEmpty else { return out }

        var rows: [[String]] = [["CENTRAL", "TYPE", "MTU", "SECURITY", "QUEUE", "SUBSCRIPTIONS"]]
        for c in connections {
            let subscriptions = (c["subscriptions"] as? [JSONObject] ?? []).map { s -> String in
                let kinds = [(s["notify"] as? Bool == true) ? "notify" : nil, (s["indicate"] as? Bool == true) ? "indicate" : nil]
                    .compactMap { $0 }
                return "\(s["characteristic"].map(scalar) ?? "?") (\(kinds.isEmpty ? "off" : kinds.joined(separator: ", ")))"
            }
            rows.append([
                c["central"].map(scalar) ?? "?",
                c["address_type"].map(scalar) ?? "?",
                c["mtu"].map(scalar) ?? "?",
                c["security"].map(scalar) ?? "?",
                c["queue"].map(scalar) ?? "?",
                subscriptions.isEmpty ? "-" : subscriptions.joined(separator: ", "),
            ])
        }
        let rightAligned: Set<Int> = [2, 4]
        var widths = [Int](repeating: 0, count: 6)
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

    /// `10:00:00.123 written central=11:22:33:44:55:66 characteristic=label value=4869 "Hi"`
    /// (local time; known keys first, the rest sorted).
    static func event(_ event: JSONObject, at date: Date) -> String {
        let order = ["central", "characteristic", "request", "mtu", "notify", "indicate", "offset", "reason", "value"]
        var parts = [time(date), event["event"].map(scalar) ?? "?"]
        let others = event.keys.filter { $0 != "event" && !order.contains($0) }.sorted()
        for key in order + others {
            guard let v = event[key] else { continue }
            parts.append(key == "value" ? "value=\(value(v))" : "\(key)=\(scalar(v))")
        }
        return parts.joined(separator: " ")
    }

    /// A value object as hex, followed by the text in quotes when it is printable ASCII.
    static func value(_ v: Any) -> String {
        guard let bytes = try? GetValue.bytes(of: v) else { return scalar(v) }
        let hex = AttributeValueLiteral.hexString(bytes)
        if !bytes.isEmpty, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) {
            return "\(hex) \"\(String(decoding: bytes, as: UTF8.self))\""
        }
        return hex.isEmpty ? "\"\"" : hex
    }

    static func scalar(_ v: Any) -> String {
        switch v {
        case let s as String: return s
        case let n as NSNumber:
            // JSONSerialization gives booleans as NSNumber too, with the objCType of a char.
            if String(cString: n.objCType) == "c" { return n.boolValue ? "true" : "false" }
            return n.stringValue
        default:
            return json(v)
        }
    }

    static func json(_ v: Any) -> String {
        guard JSONSerialization.isValidJSONObject(v),
            let data = try? JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "\(v)" }
        return String(decoding: data, as: UTF8.self)
    }

    private static func time(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.dateFormat = "HH:mm:ss.SSS"
        return f.string(from: date)
    }
}
