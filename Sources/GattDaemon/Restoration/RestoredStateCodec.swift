import GattControlProtocol
import GattCore

/// `<state-dir>/restore.json`: one compact JSON object, replaced whole.
/// `{"version":1,"services":[{"start":40,"service":{…}}],"advertising_off":["beacon"],
///   "advertising_data":[{"set":"primary","manufacturer_data":[…]}]}`
enum RestoredStateCodec {
    static let version = 1

    static func encode(_ s: RestoredState) -> [UInt8] {
        let services: [JSONText] = s.services.map { .object([("start", .int(Int($0.start))), ("service", $0.definition)]) }
        let data: [JSONText] = s.advertisingData.keys.sorted().map { id in
            .object([("set", .string(id))] + (s.advertisingData[id]?.jsonMembers ?? []))
        }
        let o = JSONText.object([
            ("version", .int(version)), ("services", .array(services)),
            ("advertising_off", .array(s.advertisingOff.map { .string($0) })), ("advertising_data", .array(data)),
        ])
        return Array((o.text + "\n").utf8)
    }

    /// Nil when the bytes are not such a file (set aside by the caller).
    static func decode(_ bytes: [UInt8]) -> RestoredState? {
        guard let v = try? JSONParser.parse(bytes), case .object(let members) = v.kind else { return nil }
        func member(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }
        guard case .number(let n)? = member("version")?.kind, Int(n) == version else { return nil }
        var s = RestoredState()
        if case .array(let items)? = member("services")?.kind {
            for item in items {
                guard case .object(let m) = item.kind,
                    case .number(let start)? = m.first(where: { $0.key == "start" })?.value.kind, let h = UInt16(start),
                    let service = m.first(where: { $0.key == "service" })?.value
                else { return nil }
                var id: String?
                if case .object(let sm) = service.kind, case .string(let i)? = sm.first(where: { $0.key == "id" })?.value.kind { id = i }
                s.services.append(.init(start: h, definition: JSONText(service), id: id))
            }
        }
        if case .array(let items)? = member("advertising_off")?.kind {
            for item in items {
                guard case .string(let id) = item.kind else { return nil }
                s.advertisingOff.append(id)
            }
        }
        if case .array(let items)? = member("advertising_data")?.kind {
            for item in items {
                guard case .object(let m) = item.kind, case .string(let id)? = m.first(where: { $0.key == "set" })?.value.kind,
                    case .success(let update) = AdvertisingDataUpdate.parse(
                        manufacturerData: m.first { $0.key == "manufacturer_data" }?.value, serviceData: m.first { $0.key == "service_data" }?.value)
                else { return nil }
                s.advertisingData[id] = update
            }
        }
        return s
    }
}
