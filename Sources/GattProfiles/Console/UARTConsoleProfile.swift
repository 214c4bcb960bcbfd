import GattCore

/// A Bluetooth serial console's options (`{"profile": "uart_console", ...}`).
public struct UARTConsoleOptions: Sendable, Equatable {
    /// Who may have a session: `authenticated` (the default: LE Secure Connections or legacy
    /// pairing with MITM protection, and a bond), `encrypted`, or `none`.
    public enum Security: String, Sendable, CaseIterable {
        case authenticated, encrypted, none
    }
    public var security: Security = .authenticated
    /// The program each session runs on its pty (argv).
    public var command: [String] = ["/bin/login"]
    /// `TERM` in the program's environment.
    public var term = "vt100"
    /// Sessions at once (one per central).
    public var maxSessions = 4
    /// Bytes a central may have written that the program has not read yet; past it the
    /// session ends (the program does not read its terminal).
    public var maxPendingInput = 64 * 1024
    /// The RX and TX characteristics' ids.
    public var rxID: String
    public var txID: String
}

/// The Nordic UART Service: RX (…0002, Write and Write Without Response) takes what the
/// central types, TX (…0003, notify) carries what the program prints. What nRF Toolbox,
/// Serial Bluetooth Terminal, Bluefruit Connect and Web Bluetooth terminals speak.
enum UARTConsoleProfile {
    static let serviceUUID = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
    static let rxUUID = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"
    static let txUUID = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
    static let keys = ["profile", "id", "security", "command", "term", "max_sessions", "max_pending_input"]

    static func parse(_ entry: JSONValue, at path: String, reader r: ConfigReader) -> ProfileInstance? {
        guard let o = r.object(entry, at: path, keys: keys) else { return nil }
        let id = o.profileID(default: "console", reader: r)
        var options = UARTConsoleOptions(rxID: id + "_rx", txID: id + "_tx")
        var warnings: [String] = []
        if let v = o.value("security"),
            let s = r.choice(v, at: o.path("security"), UARTConsoleOptions.Security.allCases.map(\.rawValue), what: "a security level")
        {
            options.security = UARTConsoleOptions.Security(rawValue: s) ?? .authenticated
        }
        if let v = o.value("command"), let list = r.array(v, at: o.path("command")) {
            var argv: [String] = []
            for (i, e) in list.enumerated() {
                guard let s = r.string(e, at: ConfigReader.element(o.path("command"), i)) else { continue }
                if s.isEmpty || s.utf8.contains(0) {
                    r.error(ConfigReader.element(o.path("command"), i), "must be a non-empty string without NUL", at: e.offset)
                }
                argv.append(s)
            }
            if list.isEmpty { r.error(o.path("command"), "must name a program: [\"/bin/login\"]", at: v.offset) }
            if let first = argv.first, !first.hasPrefix("/") {
                r.error(ConfigReader.element(o.path("command"), 0), "must be an absolute path (\(ConfigReader.quoted(first)) is not)", at: v.offset)
            }
            options.command = argv
        }
        if options.security != .authenticated {
            warnings.append(
                "\(o.path("security")): \"\(options.security.rawValue)\": the console (\(options.command.first ?? "")…) is open to \(options.security == .none ? "any central in range, without pairing" : "any central that pairs, without MITM protection or a bond")")
        }
        if let v = o.value("term"), let s = r.string(v, at: o.path("term")) { options.term = s }
        if let v = o.value("max_sessions"), let n = r.integer(v, at: o.path("max_sessions"), in: 1...64) { options.maxSessions = n }
        if let v = o.value("max_pending_input"), let n = r.integer(v, at: o.path("max_pending_input"), in: 512...(16 << 20), unit: " bytes") {
            options.maxPendingInput = n
        }
        // RX: written by the central; TX: notified. Their security follows the entry's.
        let rxPermissions: [String] =
            switch options.security {
            case .authenticated: ["write_authentication_required"]
            case .encrypted: ["write_encryption_required"]
            case .none: ["writeable"]
            }
        let txProperties = options.security == .none ? ["notify"] : ["notify_encryption_required"]
        let service = ServiceObject.service(
            id: id, uuid: serviceUUID,
            characteristics: [
                ServiceObject.characteristic(
                    id: options.rxID, uuid: rxUUID, properties: ["write", "write_without_response"], permissions: rxPermissions, maxLength: 512,
                    userDescription: "RX"),
                ServiceObject.characteristic(id: options.txID, uuid: txUUID, properties: txProperties, maxLength: 512, userDescription: "TX"),
            ], at: entry.offset)
        return ProfileInstance(id: id, path: path, service: service, options: .uartConsole(options), warnings: warnings)
    }
}
