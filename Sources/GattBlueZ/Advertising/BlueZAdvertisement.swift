import GattCore
import GattDBus

/// One advertising set as the `org.bluez.LEAdvertisement1` object bluetoothd's
/// `LEAdvertisingManager1.RegisterAdvertisement` takes (doc/org.bluez.LEAdvertisement.rst).
/// bluetoothd builds the AD structures itself from named properties, and BlueZ 5.66 takes
/// through `Data` only the AD types it has no property for; so the set's payloads, as gattd
/// built them, are read back into those properties. Sans-I/O.
public enum BlueZAdvertisement {
    public static let interface = "org.bluez.LEAdvertisement1"

    /// The properties of `set`'s object.
    public static func properties(_ set: AdvertisingSet) -> [String: DBusValue] {
        let p = set.payloads
        var props: [String: DBusValue] = [
            "Type": .string(p.isConnectable ? "peripheral" : "broadcast"),
        ]
        var uuids: [String] = [], includes: [String] = []
        var manufacturer: [DBusValue] = [], serviceData: [DBusValue] = [], data: [DBusValue] = []
        var name: String?
        for (type, value) in structures(p.advertisingData) + structures(p.scanResponseData) {
            switch type {
            case 0x01:
                // Flags: bluetoothd writes its own; General Discoverable asks for them. Not
                // for a broadcaster, which bluetoothd refuses with any ("Broadcast cannot set
                // flags": Core Vol 3 Part C §9.1.1, broadcast mode sets no discoverable flag).
                if p.isConnectable, value.first.map({ $0 & 0x02 != 0 }) == true { props["Discoverable"] = .boolean(true) }
            case 0x02, 0x03: uuids += uuidList(value, width: 2)
            case 0x04, 0x05: uuids += uuidList(value, width: 4)
            case 0x06, 0x07: uuids += uuidList(value, width: 16)
            case 0x08, 0x09: name = name ?? String(decoding: value, as: UTF8.self)
            case 0x0A: if !includes.contains("tx-power") { includes.append("tx-power") }
            case 0x19 where value.count == 2: props["Appearance"] = .uint16(UInt16(value[0]) | UInt16(value[1]) << 8)
            case 0x16, 0x20, 0x21:
                let width = type == 0x16 ? 2 : type == 0x20 ? 4 : 16
                guard value.count >= width, let uuid = BluetoothUUID(littleEndian: value.prefix(width)) else { continue }
                serviceData.append(.dictEntry(.string(uuid.canonicalString), .variant(.bytes(Array(value.dropFirst(width))))))
            case 0xFF where value.count >= 2:
                manufacturer.append(.dictEntry(.uint16(UInt16(value[0]) | UInt16(value[1]) << 8), .variant(.bytes(Array(value.dropFirst(2))))))
            default:
                data.append(.dictEntry(.byte(type), .variant(.bytes(value))))
            }
        }
        if !uuids.isEmpty { props["ServiceUUIDs"] = .strings(uuids) }
        if let name { props["LocalName"] = .string(name) }
        if !includes.isEmpty { props["Includes"] = .strings(includes) }
        if !manufacturer.isEmpty { props["ManufacturerData"] = .array(element: "{qv}", manufacturer) }
        if !serviceData.isEmpty { props["ServiceData"] = .array(element: "{sv}", serviceData) }
        if !data.isEmpty { props["Data"] = .array(element: "{yv}", data) }
        if case .extended = p.pdus { props["SecondaryChannel"] = .string("1M") }
        return props
    }

    /// The AD structures of a payload (length, type, value; Core Spec Supplement Part A §1),
    /// up to the first malformed one.
    static func structures(_ bytes: [UInt8]) -> [(type: UInt8, value: [UInt8])] {
        var out: [(UInt8, [UInt8])] = []
        var i = 0
        while i < bytes.count {
            let length = Int(bytes[i])
            guard length > 0, i + 1 + length <= bytes.count else { break }
            out.append((bytes[i + 1], Array(bytes[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return out
    }

    private static func uuidList(_ value: [UInt8], width: Int) -> [String] {
        stride(from: 0, to: value.count - width + 1, by: width).compactMap {
            BluetoothUUID(littleEndian: value[$0..<($0 + width)])?.canonicalString
        }
    }
}
