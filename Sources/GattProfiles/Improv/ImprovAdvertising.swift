import GattCore

/// The spec's advertising rule (improv-wifi.com/ble, "Bluetooth LE Advertisement"): the
/// service UUID and the service data 0x4677 in the same advertisement, never only in the scan
/// response. gattd keeps the service data's bytes current (`advertising_data`); the set that
/// carries them is the config's.
enum ImprovAdvertising {
    static let serviceDataUUID: [UInt8] = [0x77, 0x46]
    /// 00467768-6228-2272-4663-277478268000, little-endian as in an AD structure.
    static let serviceUUID: [UInt8] = [0x00, 0x80, 0x26, 0x78, 0x74, 0x27, 0x63, 0x46, 0x72, 0x22, 0x28, 0x62, 0x68, 0x77, 0x46, 0x00]

    /// Why the set `options.advertisingSet` (nil: the primary) cannot carry Improv's
    /// advertisement; nil when its advertising data has both.
    static func problem(_ options: ImprovWiFiOptions, sets: [AdvertisingSet]) -> String? {
        let id = options.advertisingSet ?? AdvertisingSet.primaryID
        guard let set = sets.first(where: { $0.id == id }) else {
            return "advertising set \"\(id)\" (advertising_set) is not in the config's advertising_sets"
        }
        let fields = structures(set.payloads.advertisingData)
        let hasUUID = fields.contains { f in
            (f.type == 0x06 || f.type == 0x07) && stride(from: 0, to: f.data.count, by: 16).contains { i in Array(f.data[i..<min(i + 16, f.data.count)]) == serviceUUID }
        }
        let hasData = fields.contains { $0.type == 0x16 && $0.data.starts(with: serviceDataUUID) }
        guard !(hasUUID && hasData) else { return nil }
        let missing = [hasUUID ? nil : "the service UUID 00467768-6228-2272-4663-277478268000 (\"service_uuids\")", hasData ? nil : "service data 4677 (\"service_data\": [{\"uuid\": \"4677\", \"data\": {\"hex\": \"010000000000\"}}])"]
            .compactMap { $0 }
        return "\(set.path) must advertise \(missing.joined(separator: " and ")) in its advertising data, not the scan response (Improv clients do not scan actively); give Improv an advertising set of its own, as config/improv-wifi.json does"
    }

    static func structures(_ payload: [UInt8]) -> [(type: UInt8, data: [UInt8])] {
        var out: [(UInt8, [UInt8])] = []
        var i = 0
        while i < payload.count {
            let n = Int(payload[i])
            guard n > 0, i + 1 + n <= payload.count else { break }
            out.append((payload[i + 1], Array(payload[i + 2..<i + 1 + n])))
            i += 1 + n
        }
        return out
    }
}

extension ProfileCatalog {
    /// What the profiles need of the config's advertising sets, as warnings
    /// (`--check-config` prints them, gattd logs them at start).
    public func advertisingWarnings(_ instances: [ProfileInstance], sets: [AdvertisingSet]) -> [String] {
        instances.compactMap { i in
            guard case .improvWiFi(let o) = i.options, let p = ImprovAdvertising.problem(o, sets: sets) else { return nil }
            return "\(i.path): \(p)"
        }
    }
}
