import GattCore

/// The Improv Wi-Fi service `00467768-6228-2272-4663-277478268000` (improv-wifi.com/ble):
/// Current State …8001, Error State …8002 (read, notify), RPC Command …8003 (write), RPC
/// Result …8004 (read, notify), Capabilities …8005 (read). No pairing: the protocol's security
/// is its authorization.
enum ImprovWiFiProfile {
    static let serviceUUID = "00467768-6228-2272-4663-277478268000"
    static func uuid(_ n: Int) -> String { "00467768-6228-2272-4663-27747826800\(n)" }
    static let keys = ["profile", "id", "authorization", "wifi", "redirect_url", "identify_command", "timeout_s", "advertising_set", "device_name"]

    static func parse(_ entry: JSONValue, at path: String, reader r: ConfigReader) -> ProfileInstance? {
        guard let o = r.object(entry, at: path, keys: keys) else { return nil }
        let id = o.profileID(default: "improv", reader: r)
        var options = ImprovWiFiOptions(
            serviceID: id, stateID: id + "_state", errorID: id + "_error", rpcCommandID: id + "_rpc_command", rpcResultID: id + "_rpc_result",
            capabilitiesID: id + "_capabilities")
        var warnings: [String] = []
        if let v = o.value("authorization") {
            switch v.kind {
            case .string(let s) where s == "none": options.authorization = .none
            case .string(let s) where s == "control": options.authorization = .control(.seconds(60))
            case .number:
                if let n = r.number(v, at: o.path("authorization"), in: 1...86400, unit: " s") {
                    options.authorization = .control(.milliseconds(Int64((n * 1000).rounded())))
                }
            default:
                r.error(o.path("authorization"), "expected \"none\", \"control\" or a number of seconds, got \(v.typeDescription)", at: v.offset)
            }
        }
        if options.authorization == .none {
            warnings.append("\(o.path("authorization")): \"none\": any central in range can set this box's Wi-Fi network")
        }
        if let v = o.value("wifi") {
            if case .string(let s) = v.kind {
                if s != "networkmanager" { r.error(o.path("wifi"), "expected \"networkmanager\" or {\"command\": [...]}, got \(ConfigReader.quoted(s))", at: v.offset) }
            } else if let w = r.object(v, at: o.path("wifi"), keys: ["command", "scan_command"], required: ["command"]) {
                let connect = w.value("command").flatMap { argv($0, at: w.path("command"), r) } ?? []
                let scan = w.value("scan_command").flatMap { argv($0, at: w.path("scan_command"), r) }
                options.wifi = .command(connect: connect, scan: scan)
            }
        }
        if let v = o.value("redirect_url"), let s = r.string(v, at: o.path("redirect_url")) {
            if s.utf8.count > 200 { r.error(o.path("redirect_url"), "is \(s.utf8.count) bytes; an RPC result holds at most 200", at: v.offset) }
            options.redirectURL = s
        }
        if let v = o.value("identify_command") { options.identifyCommand = argv(v, at: o.path("identify_command"), r) }
        if let v = o.value("timeout_s"), let n = r.number(v, at: o.path("timeout_s"), in: 1...3600, unit: " s") {
            options.timeout = .milliseconds(Int64((n * 1000).rounded()))
        }
        if let v = o.value("advertising_set"), let s = r.string(v, at: o.path("advertising_set")) { options.advertisingSet = s }
        if let v = o.value("device_name"), let s = r.string(v, at: o.path("device_name")) { options.deviceName = s }

        let initial: UInt8 = options.authorization == .none ? 0x02 : 0x01
        let service = ServiceObject.service(
            id: id, uuid: serviceUUID,
            characteristics: [
                ServiceObject.characteristic(id: options.stateID, uuid: uuid(1), properties: ["read", "notify"], value: .hexValue([initial]), maxLength: 1),
                ServiceObject.characteristic(id: options.errorID, uuid: uuid(2), properties: ["read", "notify"], value: .hexValue([0]), maxLength: 1),
                ServiceObject.characteristic(id: options.rpcCommandID, uuid: uuid(3), properties: ["write", "write_without_response"], maxLength: 512),
                ServiceObject.characteristic(id: options.rpcResultID, uuid: uuid(4), properties: ["read", "notify"], maxLength: 512),
                ServiceObject.characteristic(id: options.capabilitiesID, uuid: uuid(5), properties: ["read"], value: .hexValue([options.capabilities.byte]), maxLength: 1),
            ], at: entry.offset)
        return ProfileInstance(id: id, path: path, service: service, options: .improvWiFi(options), warnings: warnings)
    }

    /// A non-empty argv, absolute path first.
    static func argv(_ v: JSONValue, at path: String, _ r: ConfigReader) -> [String]? {
        guard let list = r.array(v, at: path) else { return nil }
        var out: [String] = []
        for (i, e) in list.enumerated() {
            guard let s = r.string(e, at: ConfigReader.element(path, i)) else { continue }
            if s.isEmpty || s.utf8.contains(0) { r.error(ConfigReader.element(path, i), "must be a non-empty string without NUL", at: e.offset) }
            out.append(s)
        }
        if list.isEmpty { r.error(path, "must name a program", at: v.offset) }
        if let first = out.first, !first.hasPrefix("/") {
            r.error(ConfigReader.element(path, 0), "must be an absolute path (\(ConfigReader.quoted(first)) is not)", at: v.offset)
        }
        return out
    }
}
