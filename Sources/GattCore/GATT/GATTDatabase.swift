import Crypto
import CryptoExtras

/// What an attribute is in the GATT tree, with the index of the service or
/// characteristic it belongs to in `GATTDatabase.services` / `.characteristics`.
public enum AttributeRole: Hashable, Sendable {
    case serviceDeclaration(service: Int)
    case includeDeclaration(service: Int, included: Int)
    case characteristicDeclaration(characteristic: CharacteristicIndex)
    case characteristicValue(characteristic: CharacteristicIndex)
    /// Client Characteristic Configuration: its value is per connection, not stored here.
    case clientCharacteristicConfiguration(characteristic: CharacteristicIndex)
    case descriptor(characteristic: CharacteristicIndex)
}

/// One row of the attribute table (Core Spec Vol 3 Part F §3.2).
public struct Attribute: Sendable, Equatable {
    public let handle: AttributeHandle
    public let type: BluetoothUUID
    /// The stored value (for a CCCD, the default 0x0000; the real one is per connection).
    public var value: [UInt8]
    public let permissions: AttributePermissions
    public let role: AttributeRole
    /// Largest value a write may leave (512 for values, Vol 3 Part F §3.2.9).
    public let maxLength: Int
}

/// A service in the database: its declaration handle and group end.
public struct Service: Sendable, Equatable {
    public let id: String?
    public let uuid: BluetoothUUID
    public let isPrimary: Bool
    public let handle: AttributeHandle
    public let endHandle: AttributeHandle
    /// Indices into `GATTDatabase.services`.
    public let includes: [Int]
    /// Indices into `GATTDatabase.characteristics`.
    public let characteristics: [CharacteristicIndex]
}

/// A characteristic in the database and the handles of its attributes.
public struct Characteristic: Sendable, Equatable {
    public let id: String?
    public let uuid: BluetoothUUID
    public let properties: CharacteristicProperties
    public let permissions: AttributePermissions
    public let service: Int
    public let declarationHandle: AttributeHandle
    public let valueHandle: AttributeHandle
    public let cccdHandle: AttributeHandle?
    public let userDescriptionHandle: AttributeHandle?
    public let endHandle: AttributeHandle
    public let maxLength: Int
    public let valueSource: CharacteristicValueSource
    /// The name the control protocol and logs use: the id, else the UUID.
    public var displayName: String { id ?? uuid.description }
}

// MARK: - Definitions (what a config describes, before handles exist)

public struct DescriptorDefinition: Sendable, Equatable {
    public var uuid: BluetoothUUID
    public var value: [UInt8]
    public var permissions: AttributePermissions
    public var maxLength: Int
    public init(uuid: BluetoothUUID, value: [UInt8] = [], permissions: AttributePermissions = [.readable], maxLength: Int = 512) {
        self.uuid = uuid; self.value = value; self.permissions = permissions; self.maxLength = maxLength
    }
}

public struct ServiceDefinition: Sendable, Equatable {
    public var id: String?
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    /// Indices of included services in the same definition list.
    public var includes: [Int]
    public var characteristics: [CharacteristicDefinition]
    /// The profile this service was expanded from (`{"profile": NAME}` in the config, see
    /// `ServiceExpander`); nil for a service written out. A label only: it is not served.
    public var profile: String?
    public init(
        id: String? = nil, uuid: BluetoothUUID, isPrimary: Bool = true, includes: [Int] = [], characteristics: [CharacteristicDefinition] = [],
        profile: String? = nil
    ) {
        self.id = id; self.uuid = uuid; self.isPrimary = isPrimary; self.includes = includes; self.characteristics = characteristics
        self.profile = profile
    }
}

// MARK: - The database

/// The server's attribute table, in handle order from 0x0001. GAP (0x1800) and GATT
/// (0x1801) come first, then the given services, each right after the previous one or at
/// its placement (runtime services: handles never move, a removed service leaves a gap)
/// (Core Spec Vol 3 Part G §3: service, includes, then each characteristic's
/// declaration, value and descriptors).
public struct GATTDatabase: Sendable, Equatable {
    /// In handle order; `attributes[i].handle == i + 1` unless a service was placed after a gap.
    public private(set) var attributes: [Attribute]
    public let services: [Service]
    public let characteristics: [Characteristic]

    /// Handle of the Service Changed characteristic value.
    public let serviceChangedHandle: AttributeHandle
    /// Handle of the Database Hash characteristic value.
    public let databaseHashHandle: AttributeHandle

    /// Builds the table. `services` refer to included services by index into
    /// `services`. Validation of the definitions is the config loader's job;
    /// this only lays out handles.
    ///
    /// `placements[i]`, when given and not nil, is the first handle of `userServices[i]`: it
    /// must not be below the handle after the previous service (it is raised to it), and the
    /// caller checks that the table fits (`GATTDatabase.layoutEnd`).
    public init(deviceName: String, appearance: UInt16 = 0, services userServices: [ServiceDefinition], placements: [UInt16?] = []) {
        var b = Builder()
        // GAP service: Device Name, Appearance.
        let gap = ServiceDefinition(
            id: "gap", uuid: GATTUUID.genericAccess,
            characteristics: [
                CharacteristicDefinition(id: "device_name", uuid: GATTUUID.deviceName, properties: [.read], value: Array(deviceName.utf8), maxLength: 248),
                CharacteristicDefinition(id: "appearance", uuid: GATTUUID.appearance, properties: [.read], value: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)], maxLength: 2),
            ])
        // GATT service: Service Changed (indicate), Client Supported Features, Database Hash,
        // Server Supported Features (always there, so that handles do not move when Enhanced
        // ATT is switched on or off: only its value's bit 0 follows, `setEnhancedATTSupported`).
        let gatt = ServiceDefinition(
            id: "gatt", uuid: GATTUUID.genericAttribute,
            characteristics: [
                CharacteristicDefinition(id: "service_changed", uuid: GATTUUID.serviceChanged, properties: [.indicate], permissions: [], value: [0x01, 0x00, 0xFF, 0xFF], maxLength: 4),
                CharacteristicDefinition(id: "client_supported_features", uuid: GATTUUID.clientSupportedFeatures, properties: [.read, .write], value: [0x00], maxLength: 1),
                CharacteristicDefinition(id: "database_hash", uuid: GATTUUID.databaseHash, properties: [.read], value: Array(repeating: 0, count: 16), maxLength: 16),
                CharacteristicDefinition(
                    id: "server_supported_features", uuid: GATTUUID.serverSupportedFeatures, properties: [.read], value: [0x00], maxLength: 1),
            ])
        // `includes` index `userServices`; the builder indexes `all` (GAP and
        // GATT first), so shift them, dropping any out of range.
        let builtInCount = 2
        let all = [gap, gatt] + userServices.map { s in
            var s = s
            s.includes = s.includes.filter { $0 >= 0 && $0 < userServices.count }.map { $0 + builtInCount }
            return s
        }
        // Service declaration handles are needed for includes: lay out in two passes.
        var starts: [Int] = []
        var h = 1
        for (i, s) in all.enumerated() {
            if i >= builtInCount, i - builtInCount < placements.count, let p = placements[i - builtInCount] { h = max(h, Int(p)) }
            starts.append(h)
            h += 1 + s.includes.count
            for c in s.characteristics { h += Builder.attributeCount(c) }
        }
        for (i, s) in all.enumerated() { b.add(service: s, index: i, all: all, starts: starts) }
        self.attributes = b.attributes
        self.services = b.services
        self.characteristics = b.characteristics
        self.serviceChangedHandle = b.characteristics[BuiltIn.serviceChanged.rawValue].valueHandle
        self.databaseHashHandle = b.characteristics[BuiltIn.databaseHash.rawValue].valueHandle
        self.attributes[b.index(databaseHashHandle)].value = Self.computeHash(attributes)
    }

    public func attribute(at handle: AttributeHandle) -> Attribute? {
        index(of: handle).map { attributes[$0] }
    }

    /// The index in `attributes` of the attribute with `handle` (none in a gap).
    public func index(of handle: AttributeHandle) -> Int? {
        let i = Int(handle.rawValue) - 1
        if i >= 0, i < attributes.count, attributes[i].handle == handle { return i }
        let j = firstIndex(atOrAfter: Int(handle.rawValue))
        return j < attributes.count && attributes[j].handle == handle ? j : nil
    }

    /// The index of the first attribute whose handle is `handle` or more (`attributes.count` if none).
    public func firstIndex(atOrAfter handle: Int) -> Int {
        var lo = 0, hi = attributes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if Int(attributes[mid].handle.rawValue) < handle { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The last handle in use.
    public var lastHandle: AttributeHandle { attributes.last?.handle ?? AttributeHandle(0) }

    /// The handle after the last attribute of `services` laid out with `placements` as `init`
    /// does (more than 0xFFFF: the table does not fit).
    public static func layoutEnd(_ services: [ServiceDefinition], placements: [UInt16?]) -> Int {
        var h = 0x0010  // after GAP (0x0001-0x0005) and GATT (0x0006-0x000F)
        for (i, s) in services.enumerated() {
            if i < placements.count, let p = placements[i] { h = max(h, Int(p)) }
            h += 1 + s.includes.count
            for c in s.characteristics { h += Builder.attributeCount(c) }
        }
        return h
    }

    public func characteristic(valueHandle: AttributeHandle) -> Characteristic? {
        guard let a = attribute(at: valueHandle), case .characteristicValue(let c) = a.role else { return nil }
        return self[c]
    }

    /// Looks a characteristic up by config id, else by UUID string when that UUID is unique.
    public func characteristicIndex(named name: String) -> CharacteristicIndex? {
        if let i = characteristicIndex(id: name) { return i }
        guard let u = BluetoothUUID(name) else { return nil }
        let hits = characteristicIndices.filter { self[$0].uuid == u }
        return hits.count == 1 ? hits[0] : nil
    }

    /// Replaces the stored value of any attribute (no length checks).
    public mutating func setValue(_ value: [UInt8], at handle: AttributeHandle) {
        guard let i = index(of: handle) else { preconditionFailure("no attribute at \(handle)") }
        attributes[i].value = value
    }

    /// The stored value of a characteristic.
    public func value(ofCharacteristic index: CharacteristicIndex) -> [UInt8] {
        attribute(at: self[index].valueHandle)?.value ?? []
    }

    /// The Database Hash value (Core Spec Vol 3 Part G §7.3): AES-CMAC with a
    /// zero key over, in handle order, handle‖type‖value of every service,
    /// include and characteristic declaration and Characteristic Extended
    /// Properties, and handle‖type of every User Description, CCCD, SCCD,
    /// Presentation Format and Aggregate Format descriptor. Returned in the
    /// byte order the characteristic value carries (little-endian).
    public static func computeHash(_ attributes: [Attribute]) -> [UInt8] {
        var m: [UInt8] = []
        for a in attributes {
            let withValue: Bool
            switch a.type {
            case GATTUUID.primaryService, GATTUUID.secondaryService, GATTUUID.include, GATTUUID.characteristic,
                GATTUUID.extendedProperties:
                withValue = true
            case GATTUUID.userDescription, GATTUUID.clientCharacteristicConfiguration,
                GATTUUID.serverCharacteristicConfiguration, GATTUUID.presentationFormat, GATTUUID.aggregateFormat:
                withValue = false
            default: continue
            }
            m += [UInt8(a.handle.rawValue & 0xFF), UInt8(a.handle.rawValue >> 8)]
            m += a.type.attBytes
            if withValue { m += a.value }
        }
        return Array(AESCMAC.mac(key: [UInt8](repeating: 0, count: 16), message: m).reversed())
    }

    struct Builder {
        var attributes: [Attribute] = []
        var services: [Service] = []
        var characteristics: [Characteristic] = []
        /// The handle the next attribute gets.
        var next: UInt16 = 1

        func index(_ h: AttributeHandle) -> Int { attributes.firstIndex { $0.handle == h } ?? 0 }

        static func attributeCount(_ c: CharacteristicDefinition) -> Int {
            var n = 2 + c.descriptors.count
            if c.properties.canNotify || c.properties.canIndicate { n += 1 }
            if !c.properties.extendedPropertiesValue.isEmpty { n += 1 }
            if c.userDescription != nil { n += 1 }
            return n
        }

        mutating func append(_ type: BluetoothUUID, _ value: [UInt8], _ perms: AttributePermissions, _ role: AttributeRole, maxLength: Int? = nil) -> AttributeHandle {
            let h = AttributeHandle(next)
            attributes.append(Attribute(handle: h, type: type, value: value, permissions: perms, role: role, maxLength: maxLength ?? value.count))
            next &+= 1
            return h
        }

        mutating func add(service s: ServiceDefinition, index: Int, all: [ServiceDefinition], starts: [Int]) {
            next = UInt16(starts[index])
            let start = append(s.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService, s.uuid.attBytes, [.readable], .serviceDeclaration(service: index))
            for inc in s.includes {
                let incStart = UInt16(starts[inc])
                let incEnd = UInt16(Self.endOf(all, starts, inc) - 1)
                var v = le16(incStart) + le16(incEnd)
                if let u = all[inc].uuid.uuid16 { v += le16(u) }  // 128-bit UUIDs are omitted (§3.2)
                _ = append(GATTUUID.include, v, [.readable], .includeDeclaration(service: index, included: inc))
            }
            var chars: [CharacteristicIndex] = []
            for c in s.characteristics {
                let ci = CharacteristicIndex(characteristics.count)
                let decl = AttributeHandle(next)
                let valueHandle = AttributeHandle(next &+ 1)
                _ = append(GATTUUID.characteristic, [c.properties.declarationByte] + le16(valueHandle.rawValue) + c.uuid.attBytes, [.readable], .characteristicDeclaration(characteristic: ci))
                _ = append(c.uuid, c.value, c.permissions, .characteristicValue(characteristic: ci), maxLength: c.maxLength)
                var cccd: AttributeHandle?
                var userDesc: AttributeHandle?
                if c.properties.canNotify || c.properties.canIndicate {
                    cccd = append(GATTUUID.clientCharacteristicConfiguration, [0, 0], [.readable, .writeable], .clientCharacteristicConfiguration(characteristic: ci), maxLength: 2)
                }
                let ext = c.properties.extendedPropertiesValue
                if !ext.isEmpty {
                    _ = append(GATTUUID.extendedProperties, ext, [.readable], .descriptor(characteristic: ci))
                }
                if let d = c.userDescription {
                    let perms: AttributePermissions = c.properties.contains(.writableAuxiliaries) ? [.readable, .writeable] : [.readable]
                    userDesc = append(GATTUUID.userDescription, Array(d.utf8), perms, .descriptor(characteristic: ci), maxLength: 512)
                }
                for d in c.descriptors {
                    _ = append(d.uuid, d.value, d.permissions, .descriptor(characteristic: ci), maxLength: d.maxLength)
                }
                characteristics.append(Characteristic(
                    id: c.id, uuid: c.uuid, properties: c.properties, permissions: c.permissions, service: index,
                    declarationHandle: decl, valueHandle: valueHandle, cccdHandle: cccd, userDescriptionHandle: userDesc,
                    endHandle: AttributeHandle(next &- 1), maxLength: c.maxLength, valueSource: c.valueSource))
                chars.append(ci)
            }
            services.append(Service(id: s.id, uuid: s.uuid, isPrimary: s.isPrimary, handle: start, endHandle: AttributeHandle(next &- 1), includes: s.includes, characteristics: chars))
        }

        static func endOf(_ all: [ServiceDefinition], _ starts: [Int], _ i: Int) -> Int {
            var h = starts[i] + 1 + all[i].includes.count
            for c in all[i].characteristics { h += attributeCount(c) }
            return h
        }
    }
}

@inline(__always) func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

/// AES-CMAC (RFC 4493) as the Core Specification's security functions use it
/// (Vol 3 Part H §2.2.5). Key and message in the big-endian order of RFC 4493.
public enum AESCMAC {
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        // A 128-bit key and outputSize 16 cannot fail.
        var cmac = try! AES.CMAC(key: SymmetricKey(data: key))
        message.withUnsafeBytes { cmac.update(bufferPointer: $0) }
        return Array(cmac.finalize())
    }
}
