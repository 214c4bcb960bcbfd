/// `l2cap_channels` (docs/config.md "L2CAP channels") and the control op
/// `publish_l2cap_channel`'s `channel` object.
struct L2CAPChannelParser {
    let reader: ConfigReader
    static let keys = ["id", "psm", "security", "mtu"]
    /// Fewer than the 128 dynamic PSMs, so every channel always gets one.
    static let maximumChannels = 64
    /// LE PSMs a channel may ask for: SIG-assigned 0x0001–0x007F and dynamic 0x0080–0x00FF
    /// (Core Vol 3 Part A §4.22), except EATT's.
    static let psmRange = 1...0xFF
    static let reservedPSMs: [UInt16: String] = [0x0027: "Enhanced ATT (EATT)"]

    func parseList(_ v: JSONValue, at path: String) -> [L2CAPChannelConfiguration] {
        let r = reader
        guard let list = r.array(v, at: path) else { return [] }
        guard list.count <= Self.maximumChannels else {
            r.error(path, "lists \(list.count) channels; gattd serves at most \(Self.maximumChannels)", at: v.offset)
            return []
        }
        var out: [L2CAPChannelConfiguration] = []
        var ids: [String: String] = [:]
        var psms: [UInt16: String] = [:]
        for (i, e) in list.enumerated() {
            let p = ConfigReader.element(path, i)
            guard let (c, o) = parse(e, at: p) else { continue }
            if let first = ids[c.id] {
                r.error(o.path("id"), "\"\(c.id)\" is already the id of \(first)", at: o.value("id")?.offset ?? e.offset)
                continue
            }
            ids[c.id] = p
            if let psm = c.requestedPSM {
                if let first = psms[psm] {
                    r.error(o.path("psm"), "PSM \(psm) is already used by \(first)", at: o.value("psm")?.offset ?? e.offset)
                    continue
                }
                psms[psm] = p
            }
            out.append(c)
        }
        return out
    }

    /// One channel object; nil after an error (reported).
    func parse(_ v: JSONValue, at path: String) -> (L2CAPChannelConfiguration, ConfigReader.Object)? {
        let r = reader
        guard let o = r.object(v, at: path, keys: Self.keys, required: ["id"]) else { return nil }
        var ok = true
        var id = ""
        if let v = o.value("id"), let s = r.string(v, at: o.path("id")) {
            if s.isEmpty || s.utf8.count > 64 {
                r.error(o.path("id"), "must be 1 to 64 bytes long", at: v.offset)
                ok = false
            }
            id = s
        } else {
            ok = false
        }
        var psm: UInt16?
        if let v = o.value("psm") {
            if let n = r.integer(v, at: o.path("psm"), in: Self.psmRange) {
                if let what = Self.reservedPSMs[UInt16(n)] {
                    r.error(o.path("psm"), "PSM \(n) is reserved for \(what); leave \"psm\" out to have gattd pick a dynamic one", at: v.offset)
                    ok = false
                }
                psm = UInt16(n)
            } else {
                ok = false
            }
        }
        var security = L2CAPChannelSecurity.none
        if let v = o.value("security") {
            if let s = r.choice(v, at: o.path("security"), L2CAPChannelSecurity.allCases.map(\.rawValue), what: "a channel security"),
                let level = L2CAPChannelSecurity(rawValue: s)
            {
                security = level
            } else {
                ok = false
            }
        }
        var mtu = L2CAPChannelServer.defaultMTU
        if let v = o.value("mtu") {
            if let n = r.integer(v, at: o.path("mtu"), in: L2CAPChannelServer.mtuRange, unit: " bytes") { mtu = n } else { ok = false }
        }
        guard ok else { return nil }
        return (L2CAPChannelConfiguration(id: id, requestedPSM: psm, security: security, mtu: mtu), o)
    }
}

extension GattConfiguration {
    /// Gives every channel without a `psm` a dynamic one (0x0080–0x00FF): the one `kept`
    /// names for its id when still free (what an earlier run picked), else one derived from
    /// its id (the same every run), else the lowest free. Updates the characteristics whose
    /// value is a channel's PSM.
    /// `taken`: PSMs a channel without a `psm` must not get (those of channels published at run time).
    public mutating func assignL2CAPPSMs(kept: [String: UInt16] = [:], taken: Set<UInt16> = []) {
        l2capChannels = L2CAPPSMAssignment.assign(l2capChannels, kept: kept, taken: taken)
        let psms = Dictionary(l2capChannels.map { ($0.id, $0.psm) }, uniquingKeysWith: { a, _ in a })
        for s in services.indices {
            for c in services[s].characteristics.indices {
                guard let id = services[s].characteristics[c].l2capChannel, let psm = psms[id] else { continue }
                services[s].characteristics[c].value = [UInt8(psm & 0xFF), UInt8(psm >> 8)]
            }
        }
    }

    /// The channel servers the config declares (with their PSMs).
    public var l2capChannelServers: [L2CAPChannelServer] { l2capChannels.map(\.server) }
}
