/// The `security` object (docs/config.md): what the Security Manager offers and accepts
/// when a central pairs (Core Spec Vol 3 Part H §2.3).
struct SecurityParser {
    let reader: ConfigReader
    static let keys = [
        "io_capability", "bondable", "secure_connections_only", "min_key_size", "max_bonds", "allow_debug_keys",
        "request_security_on_connect", "confirm_pairing", "restore_without_encryption",
    ]
    static let ioCapabilities: [(String, SMPIOCapability)] = [
        ("no_input_no_output", .noInputNoOutput), ("display_only", .displayOnly), ("display_yes_no", .displayYesNo),
        ("keyboard_only", .keyboardOnly), ("keyboard_display", .keyboardDisplay),
    ]

    /// Reads `security` into `config.security`, and its daemon settings into `settings`.
    func parse(_ v: JSONValue, into config: inout GattConfiguration, settings: inout DaemonSettings) {
        let r = reader
        guard let o = r.object(v, at: "security", keys: Self.keys) else { return }
        var s = SecurityManagerConfiguration()
        if let v = o.value("io_capability"),
            let name = r.choice(v, at: o.path("io_capability"), Self.ioCapabilities.map(\.0), what: "an IO capability"),
            let io = Self.ioCapabilities.first(where: { $0.0 == name })?.1
        {
            s.ioCapability = io
        }
        if let v = o.value("bondable"), let b = r.bool(v, at: o.path("bondable")) { s.bondable = b }
        if let v = o.value("secure_connections_only"), let b = r.bool(v, at: o.path("secure_connections_only")) {
            s.secureConnectionsOnly = b
        }
        // Vol 3 Part H §3.5.1: encryption key sizes are 7 to 16 octets.
        if let v = o.value("min_key_size"), let n = r.integer(v, at: o.path("min_key_size"), in: 7...16, unit: " octets") {
            s.minimumKeySize = n
        }
        if let v = o.value("allow_debug_keys"), let b = r.bool(v, at: o.path("allow_debug_keys")) { s.allowDebugKeys = b }
        if let v = o.value("confirm_pairing"), let b = r.bool(v, at: o.path("confirm_pairing")) { s.confirmPairing = b }
        if let v = o.value("request_security_on_connect"), let b = r.bool(v, at: o.path("request_security_on_connect")) {
            s.requestSecurityOnConnect = b
        }
        if let v = o.value("max_bonds"), let n = r.integer(v, at: o.path("max_bonds"), in: 1...0xFFFF) { settings.maxBonds = n }
        if let v = o.value("restore_without_encryption"), let b = r.bool(v, at: o.path("restore_without_encryption")) {
            settings.restoreWithoutEncryption = b
        }
        config.security = s
    }
}
