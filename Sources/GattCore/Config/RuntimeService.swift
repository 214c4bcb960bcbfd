/// A service added while gattd runs (the control op `add_service`, Core Bluetooth's
/// `CBPeripheralManager.add`): the same JSON object as an entry of the config's `services`,
/// checked the same way, with paths relative to the request (`service.characteristics[0].uuid`).
/// Its ids share the namespace of the running database; it cannot include other services.
public enum RuntimeService {
    /// `l2capChannels`: the channels `{"l2cap_psm": id}` values may name (their PSMs fill the values).
    public static func parse(
        _ v: JSONValue, path: String = "service", in db: GATTDatabase, l2capChannels: [L2CAPChannelConfiguration] = [],
        expander: (any ServiceExpander)? = nil
    ) -> Result<ServiceDefinition, ConfigErrors> {
        let r = ConfigReader()
        guard let parsed = ServiceParser(reader: r, l2capChannelIDs: Set(l2capChannels.map(\.id))).parse(v, path: path, expander: expander) else {
            return .failure(r.errors)
        }
        for inc in parsed.includes {
            r.error(inc.path, "a service added at runtime cannot include other services", at: inc.offset)
        }
        var used: [String: String] = [:]
        for s in db.services { if let id = s.id { used[id] = "the service \(id)" } }
        for c in db.characteristics { if let id = c.id { used[id] = "the characteristic \(id)" } }
        var ids: [ParsedID] = parsed.id.map { [$0] } ?? []
        ids += parsed.characteristics.compactMap(\.id)
        for id in ids {
            if let owner = used[id.value] { r.error(id.path, "id \(ConfigReader.quoted(id.value)) is already used by \(owner)", at: id.offset) }
        }
        var linked = parsed
        linked.includes = []
        let defs = ServiceParser.link([linked], r, servicesOffset: v.offset)
        if r.hasErrors { return .failure(r.errors) }
        guard var def = defs.first else { return .failure(ConfigErrors([ConfigError(path: path, message: "is not a service")])) }
        for i in def.characteristics.indices {
            guard let id = def.characteristics[i].l2capChannel, let psm = l2capChannels.first(where: { $0.id == id })?.psm else { continue }
            def.characteristics[i].value = [UInt8(psm & 0xFF), UInt8(psm >> 8)]
        }
        return .success(def)
    }
}

extension GATTDatabase {
    /// GAP and GATT precede the configured services.
    public static let builtInServiceCount = 2
}
