/// A service as read from the file, with what the cross-checks need
/// (paths, offsets, include names) before includes are resolved.
struct ParsedService {
    var path: String
    var offset: Int
    var id: ParsedID?
    var definition: ServiceDefinition
    var includes: [(name: String, path: String, offset: Int)] = []
    var characteristics: [ParsedCharacteristic] = []
}

struct ParsedCharacteristic {
    var path: String
    var offset: Int
    var id: ParsedID?
    var definition: CharacteristicDefinition
}

struct ParsedID {
    var value: String
    var path: String
    var offset: Int
}

/// Parses `services[]`, their characteristics and descriptors, then
/// cross-checks ids, includes and addressing (`link`).
struct ServiceParser {
    let reader: ConfigReader
    /// The channel ids `{"l2cap_psm": id}` values may name (nil: any; checked later).
    var l2capChannelIDs: Set<String>? = nil

    static let serviceKeys = ["id", "uuid", "primary", "includes", "characteristics"]
    static let characteristicKeys = [
        "id", "uuid", "properties", "permissions", "value", "max_length", "user_description", "handler", "persist",
        "descriptors",
    ]
    static let descriptorKeys = ["uuid", "value", "permissions", "max_length"]

    /// Ids of the built-in GAP/GATT services and characteristics (GATTDatabase).
    static let reservedIDs: [String: String] = [
        "gap": "the built-in Generic Access service", "gatt": "the built-in Generic Attribute service",
        "device_name": "the built-in Device Name characteristic", "appearance": "the built-in Appearance characteristic",
        "service_changed": "the built-in Service Changed characteristic",
        "client_supported_features": "the built-in Client Supported Features characteristic",
        "database_hash": "the built-in Database Hash characteristic",
        "server_supported_features": "the built-in Server Supported Features characteristic",
    ]
    /// UUIDs of the built-in characteristics (for UUID addressing).
    static let builtInCharacteristicUUIDs: [BluetoothUUID] = [
        GATTUUID.deviceName, GATTUUID.appearance, GATTUUID.serviceChanged, GATTUUID.clientSupportedFeatures, GATTUUID.databaseHash,
        GATTUUID.serverSupportedFeatures,
    ]

    static let writeProperties: [(String, CharacteristicProperties)] = [
        ("write", .write), ("write_without_response", .writeWithoutResponse),
        ("authenticated_signed_writes", .authenticatedSignedWrites), ("reliable_write", .reliableWrite),
    ]

    // MARK: - Service

    /// An entry of `services`, expanded first when `expander` recognises it; nil when the
    /// expander found it invalid (its errors are reported).
    func parse(_ v: JSONValue, path: String, expander: (any ServiceExpander)?) -> ParsedService? {
        switch expander?.expand(v, at: path, reader: reader) ?? .unchanged {
        case .unchanged: return parse(v, path: path)
        case .invalid: return nil
        case .expanded(let service, let profile):
            var s = parse(service, path: path)
            s.definition.profile = profile
            return s
        }
    }

    func parse(_ v: JSONValue, path: String) -> ParsedService {
        let r = reader
        var s = ParsedService(path: path, offset: v.offset, definition: ServiceDefinition(uuid: 0x0000))
        guard let o = r.object(v, at: path, keys: Self.serviceKeys, required: ["uuid"]) else { return s }
        if let v = o.value("id") { s.id = parseID(v, at: o.path("id")) }
        s.definition.id = s.id?.value
        if let v = o.value("uuid"), let u = r.uuid(v, at: o.path("uuid")) {
            s.definition.uuid = u
            if u == GATTUUID.genericAccess {
                r.error(o.path("uuid"), "1800 (Generic Access) is built in: gattd adds it from the top-level \"name\" and \"appearance\"", at: v.offset)
            } else if u == GATTUUID.genericAttribute {
                r.error(o.path("uuid"), "1801 (Generic Attribute) is built in: gattd adds it with Service Changed and Database Hash", at: v.offset)
            }
        }
        if let v = o.value("primary"), let b = r.bool(v, at: o.path("primary")) { s.definition.isPrimary = b }
        if let v = o.value("includes"), let list = r.array(v, at: o.path("includes")) {
            for (i, e) in list.enumerated() {
                let p = ConfigReader.element(o.path("includes"), i)
                guard let name = r.string(e, at: p) else { continue }
                if case .string = e.kind, name.isEmpty {
                    r.error(p, "expected a service id, got an empty string", at: e.offset)
                    continue
                }
                s.includes.append((name, p, e.offset))
            }
        }
        if let v = o.value("characteristics"), let list = r.array(v, at: o.path("characteristics")) {
            for (i, e) in list.enumerated() {
                let c = parseCharacteristic(e, path: ConfigReader.element(o.path("characteristics"), i))
                s.characteristics.append(c)
                s.definition.characteristics.append(c.definition)
            }
        }
        return s
    }

    /// Ids: letters, digits, '_', '-', '.'; not readable as a UUID; not reserved.
    func parseID(_ v: JSONValue, at path: String) -> ParsedID? {
        let r = reader
        guard let s = r.string(v, at: path) else { return nil }
        if s.isEmpty {
            r.error(path, "must not be empty", at: v.offset)
            return nil
        }
        let allowed: (Unicode.Scalar) -> Bool = { c in
            ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-" || c == "."
        }
        if let bad = s.unicodeScalars.first(where: { !allowed($0) }) {
            r.error(path, "\(ConfigReader.quoted(s)) is not a valid id: '\(bad)' is not allowed; use letters, digits, '_', '-' and '.'", at: v.offset)
            return nil
        }
        if BluetoothUUID(s) != nil {
            r.error(path, "\(ConfigReader.quoted(s)) reads as a UUID; choose an id that is not 4 or 8 hex digits (characteristics are also addressed by UUID)", at: v.offset)
            return nil
        }
        if let what = Self.reservedIDs[s] {
            r.error(path, "\"\(s)\" is reserved for \(what)", at: v.offset)
            return nil
        }
        return ParsedID(value: s, path: path, offset: v.offset)
    }

    // MARK: - Characteristic

    func parseCharacteristic(_ v: JSONValue, path: String) -> ParsedCharacteristic {
        let r = reader
        var c = ParsedCharacteristic(path: path, offset: v.offset, definition: CharacteristicDefinition(uuid: 0x0000, properties: []))
        guard let o = r.object(v, at: path, keys: Self.characteristicKeys, required: ["uuid", "properties"]) else { return c }
        if let v = o.value("id") { c.id = parseID(v, at: o.path("id")) }
        c.definition.id = c.id?.value
        if let v = o.value("uuid"), let u = r.uuid(v, at: o.path("uuid")) { c.definition.uuid = u }

        var properties: CharacteristicProperties?
        var propertyNames: [String] = []
        if let v = o.value("properties"),
            let list = names(v, at: o.path("properties"), CharacteristicProperties.names.map(\.0), what: "a characteristic property")
        {
            propertyNames = list
            var p: CharacteristicProperties = []
            for n in list { if let bit = CharacteristicProperties.names.first(where: { $0.0 == n })?.1 { p.insert(bit) } }
            if list.isEmpty {
                r.error(o.path("properties"), "must list at least one property, e.g. [\"read\"]", at: v.offset)
            }
            properties = p
        }
        var permissions: AttributePermissions?
        var permissionNames: [String] = []
        if let v = o.value("permissions"),
            let list = names(v, at: o.path("permissions"), AttributePermissions.names.map(\.0), what: "a permission")
        {
            permissionNames = list
            var p: AttributePermissions = []
            for n in list { if let bit = AttributePermissions.names.first(where: { $0.0 == n })?.1 { p.insert(bit) } }
            permissions = p
        }
        if let v = o.value("value") {
            if let id = l2capPSMReference(v, at: o.path("value")) {
                c.definition.l2capChannel = id
                c.definition.value = [0, 0]
            } else if !Self.isL2CAPPSMReference(v), let b = r.bytes(v, at: o.path("value")) {
                c.definition.value = b
            }
        }
        var maxLengthValid = true
        if let v = o.value("max_length") {
            if let n = r.integer(v, at: o.path("max_length"), in: 1...512, unit: " bytes") { c.definition.maxLength = n } else { maxLengthValid = false }
        }
        if let v = o.value("user_description"), let s = r.string(v, at: o.path("user_description")) {
            if s.utf8.count > 512 {
                r.error(o.path("user_description"), "is \(s.utf8.count) bytes; an attribute value holds at most 512", at: v.offset)
            }
            c.definition.userDescription = s
        }
        if let v = o.value("handler"), let s = r.choice(v, at: o.path("handler"), ["store", "control"], what: "a handler"), s == "control" {
            c.definition.valueSource = .deferred
        }
        if let v = o.value("persist"), let b = r.bool(v, at: o.path("persist")), b {
            if c.definition.valueSource == .deferred {
                r.error(o.path("persist"), "only \"handler\": \"store\" values can persist; with \"control\" the control client owns the value", at: v.offset)
            } else {
                c.definition.valueSource = .persisted
            }
        }
        if c.definition.l2capChannel != nil, let v = o.value("value") {
            if let properties, let w = Self.writeProperties.first(where: { properties.contains($0.1) }) {
                r.error(o.path("value"), "an {\"l2cap_psm\": …} value is read-only: remove \"\(w.0)\" from properties", at: v.offset)
            } else if o.has("handler") || o.has("persist") {
                r.error(o.path("value"), "an {\"l2cap_psm\": …} value is gattd's: leave out \"handler\" and \"persist\"", at: v.offset)
            }
        }
        if let properties {
            c.definition.properties = properties
            c.definition.permissions = permissions ?? CharacteristicDefinition.defaultPermissions(for: properties)
        }

        // Descriptors.
        var descriptorUUIDs: [BluetoothUUID: String] = [:]  // the first path of each UUID
        if let v = o.value("descriptors"), let list = r.array(v, at: o.path("descriptors")) {
            for (i, e) in list.enumerated() {
                let p = ConfigReader.element(o.path("descriptors"), i)
                let (d, uuidOffset) = parseDescriptor(e, path: p, properties: properties ?? [])
                if let d {
                    if d.uuid != GATTUUID.presentationFormat, let first = descriptorUUIDs[d.uuid] {
                        r.error(ConfigReader.member(p, "uuid"), "\(describe(d.uuid)) is already used by \(first) of this characteristic", at: uuidOffset)
                    }
                    if descriptorUUIDs[d.uuid] == nil { descriptorUUIDs[d.uuid] = p }
                    c.definition.descriptors.append(d)
                }
            }
        }

        // Consistency of properties, permissions, value and descriptors.
        if let properties, let pv = o.value("properties") {
            let pp = o.path("properties")
            let perms = c.definition.permissions
            if properties.contains(.read), !perms.canRead {
                r.error(pp, "\"read\" needs a readable permission: add \"readable\" or \"read_encryption_required\" to permissions", at: pv.offset)
            }
            if let w = propertyNames.first(where: { n in Self.writeProperties.contains { $0.0 == n } }), !perms.canWrite {
                r.error(pp, "\"\(w)\" needs a writeable permission: add \"writeable\" or \"write_encryption_required\" to permissions", at: pv.offset)
            }
            if properties.contains(.reliableWrite), !properties.contains(.write) {
                r.error(pp, "\"reliable_write\" needs \"write\" (reliable writes are queued Write Requests)", at: pv.offset)
            }
            if properties.contains(.writableAuxiliaries), c.definition.userDescription == nil {
                r.error(pp, "\"writable_auxiliaries\" needs \"user_description\" (it makes the User Description descriptor writable)", at: pv.offset)
            }
            if properties.contains(.extendedProperties), properties.extendedPropertiesValue.isEmpty {
                r.error(pp, "\"extended_properties\" is set automatically with \"reliable_write\" or \"writable_auxiliaries\"; add one of them or remove it", at: pv.offset)
            }
            if properties.contains(.broadcast), descriptorUUIDs[GATTUUID.serverCharacteristicConfiguration] == nil {
                r.error(pp, "\"broadcast\" needs a Server Characteristic Configuration descriptor: add {\"uuid\": \"2903\"} to descriptors", at: pv.offset)
            }
            if let v = o.value("permissions"), perms.canWrite, !permissionNames.isEmpty,
                properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites, .reliableWrite])
            {
                let name = permissionNames.first { $0 == "writeable" || $0 == "write_encryption_required" || $0 == "write_authentication_required" } ?? "writeable"
                r.error(o.path("permissions"), "\"\(name)\" needs a write property: add \"write\" or \"write_without_response\" to properties", at: v.offset)
            }
        }
        if maxLengthValid, let v = o.value("value"), c.definition.value.count > c.definition.maxLength {
            if o.has("max_length") {
                r.error(o.path("value"), "is \(c.definition.value.count) bytes, longer than max_length \(c.definition.maxLength)", at: v.offset)
            } else {
                r.error(o.path("value"), "is \(c.definition.value.count) bytes, longer than the 512-byte attribute limit", at: v.offset)
            }
        }
        return c
    }

    /// A list of names from `allowed`, each once.
    func names(_ v: JSONValue, at path: String, _ allowed: [String], what: String) -> [String]? {
        let r = reader
        guard let list = r.array(v, at: path) else { return nil }
        var out: [String] = []
        var ok = true
        for (i, e) in list.enumerated() {
            let p = ConfigReader.element(path, i)
            guard let s = r.choice(e, at: p, allowed, what: what) else { ok = false; continue }
            if let first = out.firstIndex(of: s) {
                r.error(p, "\"\(s)\" is already listed at \(ConfigReader.element(path, first))", at: e.offset)
                continue
            }
            out.append(s)
        }
        return ok ? out : nil
    }

    func describe(_ u: BluetoothUUID) -> String {
        if let n = AssignedNumbers.name(of: u) { return "\(u) (\(n))" }
        return u.description
    }

    // MARK: - Descriptor

    func parseDescriptor(_ v: JSONValue, path: String, properties: CharacteristicProperties) -> (DescriptorDefinition?, Int) {
        let r = reader
        guard let o = r.object(v, at: path, keys: Self.descriptorKeys, required: ["uuid"]) else { return (nil, v.offset) }
        let uuidOffset = o.value("uuid")?.offset ?? v.offset
        var uuid: BluetoothUUID?
        if let v = o.value("uuid"), let u = r.uuid(v, at: o.path("uuid")) {
            let p = o.path("uuid")
            switch u {
            case GATTUUID.clientCharacteristicConfiguration:
                r.error(p, "2902 (Client Characteristic Configuration) is added automatically for \"notify\" and \"indicate\"; remove this descriptor", at: v.offset)
            case GATTUUID.extendedProperties:
                r.error(p, "2900 (Characteristic Extended Properties) is added automatically for \"reliable_write\" and \"writable_auxiliaries\"; remove this descriptor", at: v.offset)
            case GATTUUID.userDescription:
                r.error(p, "2901 (Characteristic User Description) is added automatically from \"user_description\"; set that key instead", at: v.offset)
            case GATTUUID.primaryService, GATTUUID.secondaryService, GATTUUID.include, GATTUUID.characteristic:
                r.error(p, "\(describe(u)) is an attribute declaration type, not a descriptor", at: v.offset)
            case GATTUUID.serverCharacteristicConfiguration where !properties.contains(.broadcast):
                r.error(p, "2903 (Server Characteristic Configuration) needs the \"broadcast\" property", at: v.offset)
                uuid = u
            default:
                uuid = u
            }
        }
        var d = DescriptorDefinition(uuid: uuid ?? 0x0000)
        if uuid == GATTUUID.serverCharacteristicConfiguration {
            d.permissions = [.readable, .writeable]
            d.value = [0x00, 0x00]
            d.maxLength = 2
        }
        if let v = o.value("permissions"),
            let list = names(v, at: o.path("permissions"), AttributePermissions.names.map(\.0), what: "a permission")
        {
            var p: AttributePermissions = []
            for n in list { if let bit = AttributePermissions.names.first(where: { $0.0 == n })?.1 { p.insert(bit) } }
            d.permissions = p
        }
        var maxLengthValid = true
        if let v = o.value("max_length") {
            if let n = r.integer(v, at: o.path("max_length"), in: 1...512, unit: " bytes") { d.maxLength = n } else { maxLengthValid = false }
        }
        if let v = o.value("value"), let b = r.bytes(v, at: o.path("value")) {
            d.value = b
            if uuid == GATTUUID.presentationFormat, b.count != 7 {
                r.error(o.path("value"), "a Characteristic Presentation Format (2904) value is 7 bytes (format, exponent, unit, namespace, description), got \(b.count)", at: v.offset)
            } else if maxLengthValid, b.count > d.maxLength {
                let limit = o.has("max_length") ? "max_length \(d.maxLength)" : "the 512-byte attribute limit"
                r.error(o.path("value"), "is \(b.count) bytes, longer than \(limit)", at: v.offset)
            }
        }
        return (uuid == nil ? nil : d, uuidOffset)
    }
}

extension ServiceParser {
    static func isL2CAPPSMReference(_ v: JSONValue) -> Bool {
        if case .object(let members) = v.kind, members.count == 1, members.first?.key == "l2cap_psm" { return true }
        return false
    }

    /// `{"l2cap_psm": "id"}`: the id of a declared channel (nil when `v` is no such object or is wrong; reported).
    func l2capPSMReference(_ v: JSONValue, at path: String) -> String? {
        guard Self.isL2CAPPSMReference(v), case .object(let members) = v.kind, let m = members.first else { return nil }
        let p = ConfigReader.member(path, "l2cap_psm")
        guard let id = reader.string(m.value, at: p) else { return nil }
        if let known = l2capChannelIDs, !known.contains(id) {
            let listed = known.isEmpty ? "no channels are declared in \"l2cap_channels\"" : "declared: " + known.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            reader.error(p, "no L2CAP channel \"\(id)\" (\(listed))", at: m.value.offset)
            return nil
        }
        return id
    }
}
