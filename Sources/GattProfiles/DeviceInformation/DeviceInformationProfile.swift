import GattCore

/// Device Information Service 0x180A: read-only strings (manufacturer, model, serial,
/// firmware, hardware and software revision) and the PnP ID. Each comes from the entry, else
/// (unless `"system": false`) from what the OS knows (`SystemFacts`); one known to neither is
/// left out. The serial number never defaults: it identifies the machine to every central in
/// range, so it is served only when the config spells it out.
enum DeviceInformationProfile {
    /// (key, UUID, the OS's default).
    static let strings: [(key: String, uuid: String)] = [
        ("manufacturer", "2A29"), ("model", "2A24"), ("serial", "2A25"), ("firmware_revision", "2A26"), ("hardware_revision", "2A27"),
        ("software_revision", "2A28"),
    ]

    static func systemValue(_ key: String, _ f: SystemFacts) -> String? {
        switch key {
        case "manufacturer": f.manufacturer
        case "model": f.model
        case "firmware_revision": f.firmwareRevision
        case "hardware_revision": f.hardwareRevision
        case "software_revision": f.softwareRevision
        default: nil  // the serial number: only from the config
        }
    }
    static let keys = ["profile", "id", "system", "pnp_id"] + strings.map(\.key)
    static let pnpKeys = ["vendor_id_source", "vendor_id", "product_id", "product_version"]

    static func parse(_ entry: JSONValue, at path: String, reader r: ConfigReader, system: SystemFacts) -> ProfileInstance? {
        guard let o = r.object(entry, at: path, keys: keys) else { return nil }
        let id = o.profileID(default: "device_information", reader: r)
        var useSystem = true
        if let v = o.value("system"), let b = r.bool(v, at: o.path("system")) { useSystem = b }
        var characteristics: [JSONText] = []
        for s in strings {
            var text: String?
            if let v = o.value(s.key), let t = r.string(v, at: o.path(s.key)) {
                if t.utf8.count > 512 { r.error(o.path(s.key), "is \(t.utf8.count) bytes; a characteristic value holds at most 512", at: v.offset) }
                text = t
            } else if useSystem {
                text = systemValue(s.key, system)
            }
            guard let text else { continue }
            characteristics.append(
                ServiceObject.characteristic(id: "\(id)_\(s.key)", uuid: s.uuid, properties: ["read"], value: .object([("utf8", .string(text))])))
        }
        if let v = o.value("pnp_id"), let p = r.object(v, at: o.path("pnp_id"), keys: pnpKeys, required: ["vendor_id", "product_id"]) {
            var source: UInt8 = 1
            if let v = p.value("vendor_id_source"), let s = r.choice(v, at: p.path("vendor_id_source"), ["bluetooth", "usb"], what: "a vendor id source") {
                source = s == "usb" ? 2 : 1
            }
            func field(_ key: String) -> UInt16 {
                guard let v = p.value(key), let n = r.integer(v, at: p.path(key), in: 0...0xFFFF) else { return 0 }
                return UInt16(n)
            }
            let vendor = field("vendor_id"), product = field("product_id"), version = field("product_version")
            let bytes = [source] + [vendor, product, version].flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            characteristics.append(ServiceObject.characteristic(id: "\(id)_pnp_id", uuid: "2A50", properties: ["read"], value: .hexValue(bytes)))
        }
        let service = ServiceObject.service(id: id, uuid: "180A", characteristics: characteristics, at: entry.offset)
        return ProfileInstance(id: id, path: path, service: service, options: .deviceInformation)
    }
}
