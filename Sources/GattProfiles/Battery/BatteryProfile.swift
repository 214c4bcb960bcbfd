import GattCore

/// The Battery service's options (`{"profile": "battery", ...}`).
public struct BatteryOptions: Sendable, Equatable {
    /// Where the level comes from: a `capacity` file (sysfs `power_supply`), or nil: the first
    /// battery under `/sys/class/power_supply` when the agent starts, else only control
    /// `notify`/`set` (a mains-powered box).
    public var capacityFile: String?
    /// How often the file is read.
    public var pollInterval: Duration = .seconds(30)
    /// The level served before the first reading (percent).
    public var initialLevel = 100
    /// The Battery Level characteristic's id.
    public var levelID: String
}

/// Battery Service 0x180F with Battery Level 0x2A19 (read, notify; one byte, percent).
enum BatteryProfile {
    static let keys = ["profile", "id", "capacity_file", "poll_interval_s", "level"]

    static func parse(_ entry: JSONValue, at path: String, reader r: ConfigReader) -> ProfileInstance? {
        guard let o = r.object(entry, at: path, keys: keys) else { return nil }
        let id = o.profileID(default: "battery", reader: r)
        var options = BatteryOptions(levelID: id + "_level")
        if let v = o.value("capacity_file"), let s = r.string(v, at: o.path("capacity_file")) {
            if !s.hasPrefix("/") { r.error(o.path("capacity_file"), "must be an absolute path", at: v.offset) }
            options.capacityFile = s
        }
        if let v = o.value("poll_interval_s"), let s = r.number(v, at: o.path("poll_interval_s"), in: 0.1...86400, unit: " s") {
            options.pollInterval = .milliseconds(Int64((s * 1000).rounded()))
        }
        if let v = o.value("level"), let n = r.integer(v, at: o.path("level"), in: 0...100, unit: " %") { options.initialLevel = n }
        let service = ServiceObject.service(
            id: id, uuid: "180F",
            characteristics: [
                ServiceObject.characteristic(
                    id: options.levelID, uuid: "2A19", properties: ["read", "notify"], value: .hexValue([UInt8(options.initialLevel)]), maxLength: 1)
            ], at: entry.offset)
        return ProfileInstance(id: id, path: path, service: service, options: .battery(options))
    }
}
