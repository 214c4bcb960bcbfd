/// `advertising_sets`: the advertising sets besides the primary one (docs/config.md).
extension AdvertisingParser {
    /// Keys of an `advertising_sets` element that `advertising` does not have.
    static let setKeys = ["id", "extended", "primary_phy", "secondary_phy"]

    /// Keys of `advertising` that hold for every set; an element that has one gets this message.
    static let globalKeys = [
        "max_connections": "not allowed in an advertising set: the connection limit is global; set it in \"advertising\"",
        "own_address_type": "not allowed in an advertising set: every set advertises with the address \"advertising\".own_address_type chooses; set it there",
        "rpa_timeout_s": "not allowed in an advertising set: every set uses the private address \"advertising\".rpa_timeout_s renews; set it there",
    ]

    /// Keys of an element that `advertising` (the primary set) has not, with the message it gets.
    static let setOnlyKeys: [String: String] = {
        let extended = "the primary set uses legacy PDUs (seen by every scanner); for extended advertising add an element "
            + "with \"extended\": true to \"advertising_sets\""
        return [
            "id": "the primary set's id is always \"\(AdvertisingSet.primaryID)\"; \"id\" belongs to the elements of \"advertising_sets\"",
            "extended": extended, "primary_phy": extended, "secondary_phy": extended,
        ]
    }()

    /// The most elements: with the primary set, one per Advertising_Handle 0x00...0xEF
    /// (Core Spec Vol 4 Part E §7.8.53).
    static let maximumSets = 239

    /// The longest set id, in bytes.
    static let maximumIDLength = 64

    /// Each element: the keys of `advertising` but the global ones, `id` (required),
    /// `extended`, `primary_phy`, `secondary_phy`. Sets take `own_address_type` and
    /// `rpa_timeout_s` from `primary`; they have no local name unless they set `local_name`.
    func parseSets(_ v: JSONValue, primary: AdvertisingConfiguration, appearance: UInt16) -> [AdvertisingSetConfiguration] {
        let r = reader
        guard let list = r.array(v, at: "advertising_sets") else { return [] }
        if list.count > Self.maximumSets {
            r.error(
                ConfigReader.element("advertising_sets", Self.maximumSets),
                "at most \(Self.maximumSets) advertising sets besides the primary one (Advertising_Handle 0x00...0xEF, Core Spec Vol 4 Part E §7.8.53); this array has \(list.count)",
                at: list[Self.maximumSets].offset)
        }
        var sets: [AdvertisingSetConfiguration] = []
        var seen: [String: String] = [:]
        for (i, element) in list.prefix(Self.maximumSets).enumerated() {
            let path = ConfigReader.element("advertising_sets", i)
            var adv = AdvertisingConfiguration()
            adv.ownAddressType = primary.ownAddressType
            adv.rpaTimeout = primary.rpaTimeout
            guard let o = parse(element, at: path, set: true, into: &adv, appearance: appearance) else { continue }
            let id = o.value("id").flatMap { parseID($0, at: o.path("id"), element: path, seen: &seen) }
            parsePDUs(o, into: &adv)
            if let id { sets.append(AdvertisingSetConfiguration(id: id, path: path, advertising: adv)) }
        }
        return sets
    }

    /// A set id: 1–64 letters, digits, `_`, `-`, `.`; not the primary's; unique.
    func parseID(_ v: JSONValue, at path: String, element: String, seen: inout [String: String]) -> String? {
        let r = reader
        guard let s = r.string(v, at: path) else { return nil }
        let allowed: (Unicode.Scalar) -> Bool = { c in
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-" || c == "."
        }
        if s.isEmpty {
            r.error(path, "must not be empty", at: v.offset)
        } else if s.utf8.count > Self.maximumIDLength {
            r.error(path, "is \(s.utf8.count) bytes; a set id has at most \(Self.maximumIDLength)", at: v.offset)
        } else if let bad = s.unicodeScalars.first(where: { !allowed($0) }) {
            r.error(path, "\(ConfigReader.quoted(s)) is not a valid id: '\(bad)' is not allowed; use letters, digits, '_', '-' and '.'", at: v.offset)
        } else if s == AdvertisingSet.primaryID {
            r.error(path, "\"\(s)\" is the id of the primary set (\"advertising\"); choose another", at: v.offset)
        } else if let first = seen[s] {
            r.error(path, "\"\(s)\" is already the id of \(first)", at: v.offset)
        } else {
            seen[s] = element
            return s
        }
        return nil
    }

    /// `extended` (default false), `primary_phy` and `secondary_phy` (default "1m", only
    /// with `extended`), and the extended sets' `scannable` rule: default false, and never
    /// with `connectable` (Vol 4 Part E §7.8.53).
    func parsePDUs(_ o: ConfigReader.Object, into adv: inout AdvertisingConfiguration) {
        let r = reader
        // nil: `extended` is there but not a boolean (already an error: say nothing more).
        var extended: Bool? = false
        if let v = o.value("extended") { extended = r.bool(v, at: o.path("extended")) }
        var primary = LEPHY.le1M
        var secondary = LEPHY.le1M
        for key in ["primary_phy", "secondary_phy"] {
            guard let v = o.value(key) else { continue }
            if extended == false {
                r.error(o.path(key), "only for extended sets: add \"extended\": true (legacy PDUs are always on the LE 1M PHY)", at: v.offset)
                continue
            }
            if key == "primary_phy" {
                if case .string("2m") = v.kind {
                    r.error(
                        o.path(key),
                        "\"2m\" is not a primary advertising PHY: the primary advertising channels use LE 1M or LE Coded (Core Spec Vol 4 Part E §7.8.53); \"2m\" is for \"secondary_phy\"",
                        at: v.offset)
                } else if let s = r.choice(v, at: o.path(key), ["1m", "coded"], what: "a primary advertising PHY"), let phy = LEPHY(configName: s) {
                    primary = phy
                }
            } else if let s = r.choice(v, at: o.path(key), ["1m", "2m", "coded"], what: "a secondary advertising PHY"), let phy = LEPHY(configName: s) {
                secondary = phy
            }
        }
        guard extended == true else { return }
        adv.pdus = .extended(primaryPHY: primary, secondaryPHY: secondary)
        if !o.has("scannable") {
            adv.scannable = false
        } else if adv.connectable, adv.scannable, !AdvertisingPayloadBuilder.isBeaconOnly(adv), let v = o.value("scannable") {
            r.error(o.path("scannable"), AdvertisingPayloadBuilder.connectableAndScannable, at: v.offset)
        }
    }
}
