#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and validates a gattd JSON config (docs/config.md). Every problem is
/// reported at once, each with its JSON path, in document order.
public enum ConfigLoader {
    static let topLevelKeys = ["$schema", "name", "appearance", "advertising", "advertising_sets", "connection", "security", "services", "state_restoration", "l2cap_channels", "eatt", "phy"]

    /// The largest config file accepted.
    public static let maximumFileSize = 16 << 20

    /// `expander`: turns `services` entries it recognises (profiles) into service objects first.
    public static func load(data: [UInt8], expander: (any ServiceExpander)? = nil) throws(ConfigErrors) -> DaemonConfiguration {
        let root: JSONValue
        do {
            root = try JSONParser.parse(data)
        } catch {
            throw ConfigErrors([ConfigError(path: "line \(error.line), column \(error.column)", message: error.message)])
        }
        let reader = ConfigReader()
        let loaded = decode(root, reader, expander: expander)
        guard !reader.hasErrors, let loaded else { throw reader.errors }
        let config = loaded.gatt
        // What only shows once everything parsed: each advertising set's payload budget
        // and the connection parameter rules.
        var late: [ConfigError] = []
        func add(_ error: AdvertisingPayloadError) {
            late.append(ConfigError(path: error.field, message: String(error.description.dropFirst(error.field.count + 2))))
        }
        do {
            _ = try config.advertisingPayloads()
        } catch {
            add(error)
        }
        for set in config.advertisingSets {
            do {
                _ = try set.build()
            } catch {
                add(error)
            }
        }
        if let preferred = config.advertising.preferredConnection {
            late += preferred.violations().map { ConfigError(path: $0.field, message: "\($0.detail) breaks the rule \"\($0.rule)\"") }
        }
        guard late.isEmpty else { throw ConfigErrors(late) }
        return loaded
    }

    /// Reads the file (the only I/O in GattCore) and loads it. A file that
    /// cannot be read gives one error with path `ConfigError.filePath`.
    public static func load(path: String, expander: (any ServiceExpander)? = nil) throws(ConfigErrors) -> DaemonConfiguration {
        let data: [UInt8]
        switch readFile(path) {
        case .success(let d): data = d
        case .failure(let e): throw ConfigErrors([e])
        }
        return try load(data: data, expander: expander)
    }

    public static func readFile(_ path: String) -> Result<[UInt8], ConfigError> {
        func failure(_ what: String) -> Result<[UInt8], ConfigError> {
            .failure(ConfigError(path: ConfigError.filePath, message: "cannot read \(path): \(what)"))
        }
        func systemError() -> String { String(cString: strerror(errno)) }
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return failure(systemError()) }
        defer { _ = close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return failure(systemError()) }
        if (st.st_mode & S_IFMT) == S_IFDIR { return failure("it is a directory") }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return failure(systemError())
            }
            if n == 0 { break }
            out += chunk[0..<n]
            if out.count > maximumFileSize { return failure("larger than \(maximumFileSize >> 20) MiB") }
        }
        return .success(out)
    }

    // MARK: - Top level

    static func decode(_ root: JSONValue, _ r: ConfigReader, expander: (any ServiceExpander)? = nil) -> DaemonConfiguration? {
        guard let obj = r.object(root, at: ConfigError.rootPath, keys: topLevelKeys, required: ["name"]) else { return nil }
        if let v = obj.value("$schema") { _ = r.string(v, at: obj.path("$schema")) }

        var name = ""
        if let v = obj.value("name"), let s = r.string(v, at: "name") {
            name = s
            if s.isEmpty {
                r.error("name", "must not be empty (it is the GAP Device Name)", at: v.offset)
            } else if s.utf8.count > 248 {
                r.error("name", "is \(s.utf8.count) bytes; the GAP Device Name holds at most 248 bytes of UTF-8", at: v.offset)
            }
        }
        var appearance: UInt16 = 0
        if let v = obj.value("appearance"), let n = r.integer(v, at: "appearance", in: 0...0xFFFF) {
            appearance = UInt16(n)
        }

        var channels: [L2CAPChannelConfiguration] = []
        if let v = obj.value("l2cap_channels") { channels = L2CAPChannelParser(reader: r).parseList(v, at: "l2cap_channels") }
        var parsed: [ParsedService] = []
        if let v = obj.value("services"), let list = r.array(v, at: "services") {
            let parser = ServiceParser(reader: r, l2capChannelIDs: Set(channels.map(\.id)))
            for (i, s) in list.enumerated() {
                if let service = parser.parse(s, path: ConfigReader.element("services", i), expander: expander) { parsed.append(service) }
            }
        }
        let services = ServiceParser.link(parsed, r, servicesOffset: obj.value("services")?.offset ?? root.offset)

        var advertising = AdvertisingConfiguration()
        advertising.localName = name
        if let v = obj.value("advertising") {
            AdvertisingParser(reader: r).parse(v, at: AdvertisingSet.primaryPath, set: false, into: &advertising, appearance: appearance)
        }
        if let v = obj.value("connection") {
            advertising.preferredConnection = AdvertisingParser(reader: r).parseConnection(v)
            advertising.requestDataLengthAndPHY = AdvertisingParser(reader: r).parseDataLengthAndPHY(v)
        }
        if let v = obj.value("phy") { advertising.preferredPHYs = AdvertisingParser(reader: r).parsePHY(v) }
        var config = GattConfiguration(name: name, appearance: appearance, advertising: advertising, services: services)
        if let v = obj.value("advertising_sets") {
            config.advertisingSets = AdvertisingParser(reader: r).parseSets(v, primary: advertising, appearance: appearance)
        }
        var settings = DaemonSettings()
        if let v = obj.value("security") { SecurityParser(reader: r).parse(v, into: &config, settings: &settings) }
        if let v = obj.value("state_restoration"), let b = r.bool(v, at: "state_restoration") { settings.stateRestoration = b }
        if let v = obj.value("eatt"), let b = r.bool(v, at: "eatt") { config.enhancedATT = b }
        config.l2capChannels = channels
        config.assignL2CAPPSMs()
        return DaemonConfiguration(gatt: config, settings: settings)
    }
}

// MARK: - advertising / connection
