/// A channel of `l2cap_channels` as the config declares it: `psm` nil means gattd picks a
/// dynamic one (`GattConfiguration.assignL2CAPPSMs`).
public struct L2CAPChannelConfiguration: Sendable, Equatable {
    public var id: String
    /// The PSM the config asks for (nil: dynamic, picked by gattd).
    public var requestedPSM: UInt16?
    public var security: L2CAPChannelSecurity
    public var mtu: Int
    /// The PSM in use: `requestedPSM`, or the dynamic one gattd picked.
    public var psm: UInt16

    public init(id: String, requestedPSM: UInt16? = nil, security: L2CAPChannelSecurity = .none, mtu: Int = L2CAPChannelServer.defaultMTU) {
        self.id = id
        self.requestedPSM = requestedPSM
        self.security = security
        self.mtu = mtu
        self.psm = requestedPSM ?? 0
    }

    public var server: L2CAPChannelServer { L2CAPChannelServer(id: id, psm: psm, security: security, mtu: mtu) }

    /// One channel object (the control op `publish_l2cap_channel`), checked as the config's
    /// `l2cap_channels` entries are, with paths relative to `path`. `psm` is `requestedPSM`
    /// (0 when gattd is to pick one).
    public static func parse(_ v: JSONValue, path: String = "channel") -> Result<L2CAPChannelConfiguration, ConfigErrors> {
        let r = ConfigReader()
        let parsed = L2CAPChannelParser(reader: r).parse(v, at: path)
        guard !r.hasErrors, let (c, _) = parsed else { return .failure(r.errors) }
        return .success(c)
    }
}

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

/// How gattd picks dynamic PSMs (pure; `GattConfiguration.assignL2CAPPSMs`).
public enum L2CAPPSMAssignment {
    public static func assign(_ channels: [L2CAPChannelConfiguration], kept: [String: UInt16], taken extra: Set<UInt16> = []) -> [L2CAPChannelConfiguration] {
        var out = channels
        var taken = Set(channels.compactMap(\.requestedPSM)).union(extra)
        let dynamic = L2CAPChannelServer.dynamicPSMs
        // First the kept ones (an earlier run's picks), so a new channel cannot take them.
        for i in out.indices where out[i].requestedPSM == nil {
            if let k = kept[out[i].id], dynamic.contains(k), !taken.contains(k) {
                out[i].psm = k
                taken.insert(k)
            } else {
                out[i].psm = 0
            }
        }
        for i in out.indices where out[i].requestedPSM == nil && out[i].psm == 0 {
            let count = UInt16(dynamic.count)
            let start = UInt16(fnv1a(out[i].id) % UInt32(count))
            for step in 0..<count {
                let psm = dynamic.lowerBound + (start + step) % count
                if !taken.contains(psm) {
                    out[i].psm = psm
                    taken.insert(psm)
                    break
                }
            }
        }
        for i in out.indices where out[i].requestedPSM != nil { out[i].psm = out[i].requestedPSM! }
        return out
    }

    /// FNV-1a over the id's UTF-8 (stable across runs and platforms, unlike `hashValue`).
    static func fnv1a(_ s: String) -> UInt32 {
        var h: UInt32 = 2_166_136_261
        for b in s.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return h
    }
}
