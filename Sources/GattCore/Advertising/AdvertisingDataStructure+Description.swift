/// Human-readable AD structures, as `gattd --check-config` prints them.
extension AdvertisingDataType {
    /// The AD type's name in the Assigned Numbers ("Complete Local Name"), or its number.
    public var name: String {
        switch self {
        case .flags: "Flags"
        case .incompleteList16BitServiceUUIDs: "Incomplete List of 16-bit Service UUIDs"
        case .completeList16BitServiceUUIDs: "Complete List of 16-bit Service UUIDs"
        case .incompleteList32BitServiceUUIDs: "Incomplete List of 32-bit Service UUIDs"
        case .completeList32BitServiceUUIDs: "Complete List of 32-bit Service UUIDs"
        case .incompleteList128BitServiceUUIDs: "Incomplete List of 128-bit Service UUIDs"
        case .completeList128BitServiceUUIDs: "Complete List of 128-bit Service UUIDs"
        case .shortenedLocalName: "Shortened Local Name"
        case .completeLocalName: "Complete Local Name"
        case .txPowerLevel: "TX Power Level"
        case .serviceData16BitUUID: "Service Data - 16-bit UUID"
        case .appearance: "Appearance"
        case .serviceData32BitUUID: "Service Data - 32-bit UUID"
        case .serviceData128BitUUID: "Service Data - 128-bit UUID"
        case .manufacturerSpecificData: "Manufacturer Specific Data"
        default: "AD type 0x" + AttributeValueLiteral.hexString([rawValue])
        }
    }
}

extension AdvertisingDataStructure {
    /// The type's name and the decoded data: `Complete Local Name "HR-Demo"`,
    /// `Complete List of 16-bit Service UUIDs 180D 180F`, `Flags 0x06 (…)`.
    public var decodedDescription: String {
        let hex = { (b: [UInt8]) in AttributeValueLiteral.hexString(b) }
        func uuids(size: Int) -> String {
            guard !data.isEmpty, data.count % size == 0 else { return hex(data) }
            return stride(from: 0, to: data.count, by: size).map { i in
                BluetoothUUID(littleEndian: data[i..<(i + size)]).map(\.description) ?? hex(Array(data[i..<(i + size)]))
            }.joined(separator: " ")
        }
        let detail: String
        switch type {
        case .flags where data.count == 1:
            var bits: [String] = []
            if data[0] & 0x01 != 0 { bits.append("LE Limited Discoverable") }
            if data[0] & 0x02 != 0 { bits.append("LE General Discoverable") }
            if data[0] & 0x04 != 0 { bits.append("BR/EDR Not Supported") }
            detail = "0x\(hex(data)) (\(bits.joined(separator: ", ")))"
        case .incompleteList16BitServiceUUIDs, .completeList16BitServiceUUIDs: detail = uuids(size: 2)
        case .incompleteList32BitServiceUUIDs, .completeList32BitServiceUUIDs: detail = uuids(size: 4)
        case .incompleteList128BitServiceUUIDs, .completeList128BitServiceUUIDs: detail = uuids(size: 16)
        case .shortenedLocalName, .completeLocalName: detail = "\"\(String(decoding: data, as: UTF8.self))\""
        case .txPowerLevel where data.count == 1: detail = "\(Int8(bitPattern: data[0])) dBm"
        case .appearance where data.count == 2: detail = "0x" + hex([data[1], data[0]])
        case .serviceData16BitUUID where data.count >= 2: detail = "\(uuid(in: 0..<2)) \(hex(Array(data[2...])))"
        case .serviceData32BitUUID where data.count >= 4: detail = "\(uuid(in: 0..<4)) \(hex(Array(data[4...])))"
        case .serviceData128BitUUID where data.count >= 16: detail = "\(uuid(in: 0..<16)) \(hex(Array(data[16...])))"
        case .manufacturerSpecificData where data.count >= 2:
            let company = "company 0x" + hex([data[1], data[0]])
            if data.count == 25, data[0...3] == [0x4C, 0x00, 0x02, 0x15] {
                let uuid = BluetoothUUID(bigEndianBytes: Array(data[4..<20]))?.canonicalString ?? ""
                let major = UInt16(data[20]) << 8 | UInt16(data[21])
                let minor = UInt16(data[22]) << 8 | UInt16(data[23])
                detail = "iBeacon \(uuid) major \(major) minor \(minor) measured power \(Int8(bitPattern: data[24])) dBm"
            } else {
                detail = "\(company) \(hex(Array(data[2...])))"
            }
        default: detail = hex(data)
        }
        return "\(type.name) \(detail)"
    }

    private func uuid(in range: Range<Int>) -> String {
        BluetoothUUID(littleEndian: data[range]).map(\.description) ?? AttributeValueLiteral.hexString(Array(data[range]))
    }

    /// A whole payload, as `--check-config` prints it: a heading with the byte count of
    /// `limit` (31 for legacy PDUs) and the hex, then one line per AD structure (its bytes,
    /// then `decodedDescription`).
    public static func describe(payload: [UInt8], title: String, limit: Int = AdvertisingPayloadBuilder.maximumDataLength) -> [String] {
        var lines = ["\(title): \(payload.count) of \(limit) bytes" + (payload.isEmpty ? "" : ": " + AttributeValueLiteral.hexString(payload))]
        guard let structures = parse(payload) else { return lines + ["  (malformed)"] }
        for s in structures {
            lines.append("  " + AttributeValueLiteral.hexString(s.encoded).padding(to: 16) + " " + s.decodedDescription)
        }
        return lines
    }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
