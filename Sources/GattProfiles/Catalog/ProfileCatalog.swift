import GattCore

/// The profiles gattd ships (docs/profiles.md): a `services` entry `{"profile": NAME, ...}`
/// becomes the standard service, with its UUIDs, properties and security. As the core's
/// `ServiceExpander` it expands entries while a config (or `add_service`) is parsed; the
/// composition then runs each instance's agent (`ProfileRunner`), which drives the daemon
/// only through the control socket's requests and events.
public struct ProfileCatalog: ServiceExpander {
    /// What the OS says about this machine (Device Information's defaults).
    public var system: SystemFacts

    public init(system: SystemFacts = SystemFacts()) {
        self.system = system
    }

    public static let names = ["uart_console", "improv_wifi", "battery", "device_information"]

    public func expand(_ entry: JSONValue, at path: String, reader: ConfigReader) -> ServiceExpansion {
        switch instance(entry, at: path, reader: reader) {
        case .notAProfile: .unchanged
        case .invalid: .invalid
        case .instance(let p): .expanded(p.service, profile: p.options.name)
        }
    }

    /// What one entry of `services` is.
    public enum Entry {
        case notAProfile
        case invalid
        case instance(ProfileInstance)
    }

    public func instance(_ entry: JSONValue, at path: String, reader r: ConfigReader) -> Entry {
        guard case .object(let members) = entry.kind, let member = members.first(where: { $0.key == "profile" }) else { return .notAProfile }
        let profilePath = ConfigReader.member(path, "profile")
        guard let name = r.string(member.value, at: profilePath) else { return .invalid }
        let parsed: ProfileInstance?
        switch name {
        case "uart_console": parsed = UARTConsoleProfile.parse(entry, at: path, reader: r)
        case "battery": parsed = BatteryProfile.parse(entry, at: path, reader: r)
        case "device_information": parsed = DeviceInformationProfile.parse(entry, at: path, reader: r, system: system)
        case "improv_wifi": parsed = ImprovWiFiProfile.parse(entry, at: path, reader: r)
        default:
            let hint = ConfigReader.closest(to: name, in: Self.names).map { "; did you mean \"\($0)\"?" } ?? "; profiles: \(Self.names.joined(separator: ", "))"
            r.error(profilePath, "unknown profile \(ConfigReader.quoted(name))\(hint)", at: member.value.offset)
            return .invalid
        }
        return parsed.map { .instance($0) } ?? .invalid
    }

    /// The profile instances among a config's `services` (a config that loaded: errors are
    /// not expected, and an invalid entry is left out).
    public func instances(inConfig root: JSONValue) -> [ProfileInstance] {
        guard case .object(let members) = root.kind, let services = members.first(where: { $0.key == "services" }),
            case .array(let list) = services.value.kind
        else { return [] }
        let r = ConfigReader()
        return list.enumerated().compactMap { i, e in
            if case .instance(let p) = instance(e, at: ConfigReader.element("services", i), reader: r) { return p }
            return nil
        }
    }
}
