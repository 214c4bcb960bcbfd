import GattCore

/// One `{"profile": ...}` entry of `services`, expanded: the service object gattd serves
/// and the options its agent runs with.
public struct ProfileInstance: Sendable {
    /// The service's id (the entry's `"id"`, or the profile's default).
    public var id: String
    /// Where the entry is (`services[2]`).
    public var path: String
    /// The service object, as an entry written out in full would be.
    public var service: JSONValue
    public var options: ProfileOptions
    /// What `--check-config` warns about (e.g. a console without authentication).
    public var warnings: [String] = []
}

/// Each profile's options.
public enum ProfileOptions: Sendable, Equatable {
    case uartConsole(UARTConsoleOptions)
    case improvWiFi(ImprovWiFiOptions)
    case battery(BatteryOptions)
    case deviceInformation

    /// The `"profile"` name.
    public var name: String {
        switch self {
        case .uartConsole: "uart_console"
        case .improvWiFi: "improv_wifi"
        case .battery: "battery"
        case .deviceInformation: "device_information"
        }
    }
}
