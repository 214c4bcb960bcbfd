/// A human-readable dump of the attribute table, one row per attribute in
/// handle order, with aligned columns so two dumps diff cleanly:
///
///     Handle  Attribute             UUID                         Properties  Permissions  Notes  Value
///     0x0001  Primary Service       1800 Generic Access                      readable            0018
public enum AttributeTable {
    /// Values longer than this are shown truncated, with their length.
    public static let maximumValueBytes = 64

    public static func render(_ db: GATTDatabase) -> String {
        var rows: [[String]] = [["Handle", "Attribute", "UUID", "Properties", "Permissions", "Notes", "Value"]]
        for a in db.attributes {
            rows.append(row(a, db))
        }
        var widths = Array(repeating: 0, count: rows[0].count)
        for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        var lines: [String] = []
        for (n, r) in rows.enumerated() {
            lines.append(format(r, widths))
            if n == 0 { lines.append(format(widths.map { String(repeating: "-", count: $0) }, widths)) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func format(_ cells: [String], _ widths: [Int]) -> String {
        var line = ""
        for (i, c) in cells.enumerated() {
            line += c
            if i < cells.count - 1 { line += String(repeating: " ", count: widths[i] - c.count + 2) }
        }
        while line.last == " " { line.removeLast() }
        return line
    }

    static func row(_ a: Attribute, _ db: GATTDatabase) -> [String] {
        let permissions = a.permissions.nameList.isEmpty ? "none" : a.permissions.nameList.joined(separator: ",")
        var uuid = a.type
        var properties = ""
        var notes: [String] = []
        var value = valueText(a.value)
        switch a.role {
        case .serviceDeclaration(let s):
            if let service = db.services[safe: s] {
                uuid = service.uuid
                if let id = service.id { notes.append("id=\(id)") }
                notes.append("end=\(service.endHandle)")
            }
        case .includeDeclaration(_, let included):
            if let service = db.services[safe: included] {
                uuid = service.uuid
                notes.append("\(service.handle)...\(service.endHandle)")
            }
        case .characteristicDeclaration(let c):
            if let ch = db.characteristics[safe: c.rawValue] {
                uuid = ch.uuid
                properties = propertyText(ch.properties)
            }
        case .characteristicValue(let c):
            if let ch = db.characteristics[safe: c.rawValue] {
                uuid = ch.uuid
                properties = propertyText(ch.properties)
                if let id = ch.id { notes.append("id=\(id)") }
                notes.append("max=\(ch.maxLength)")
                switch ch.valueSource {  // in the config's terms
                case .stored: break
                case .persisted: notes.append("persist")
                case .deferred: notes.append("handler=control")
                }
            }
        case .clientCharacteristicConfiguration:
            value += " (per connection)"
        case .descriptor:
            break
        }
        return [a.handle.description, typeName(a), AssignedNumbers.describe(uuid), properties, permissions, notes.joined(separator: " "), value]
    }

    /// "Primary Service", "Characteristic Value", "CCCD", ...
    public static func typeName(_ a: Attribute) -> String {
        switch a.role {
        case .serviceDeclaration: return a.type == GATTUUID.secondaryService ? "Secondary Service" : "Primary Service"
        case .includeDeclaration: return "Include"
        case .characteristicDeclaration: return "Characteristic"
        case .characteristicValue: return "Characteristic Value"
        case .clientCharacteristicConfiguration: return "CCCD"
        case .descriptor:
            switch a.type {
            case GATTUUID.extendedProperties: return "Extended Properties"
            case GATTUUID.userDescription: return "User Description"
            case GATTUUID.serverCharacteristicConfiguration: return "SCCD"
            case GATTUUID.presentationFormat: return "Presentation Format"
            case GATTUUID.aggregateFormat: return "Aggregate Format"
            default: return "Descriptor"
            }
        }
    }

    static func propertyText(_ p: CharacteristicProperties) -> String {
        p.nameList.joined(separator: ",")
    }

    /// Hex, plus the text in quotes when it looks like text (3 or more
    /// bytes, all printable ASCII).
    static func valueText(_ v: [UInt8]) -> String {
        if v.isEmpty { return "(empty)" }
        var s = AttributeValueLiteral.hexString(Array(v.prefix(maximumValueBytes)))
        if v.count > maximumValueBytes { s += "... (\(v.count) bytes)" }
        if v.count >= 3, v.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            s += " \"" + String(decoding: v.prefix(maximumValueBytes), as: UTF8.self) + (v.count > maximumValueBytes ? "..." : "") + "\""
        }
        return s
    }
}

extension Array {
    fileprivate subscript(safe i: Int) -> Element? { i >= 0 && i < count ? self[i] : nil }
}
