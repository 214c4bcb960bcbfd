import GattCore
import GattDBus

/// gattd's GATT database as the application bluetoothd's `GattManager1.RegisterApplication`
/// takes: an `org.freedesktop.DBus.ObjectManager` tree of `GattService1`, `GattCharacteristic1`
/// and `GattDescriptor1` objects (doc/org.bluez.GattManager.rst). Sans-I/O: a value built from
/// the database, which the object server serves and tests read.
///
/// - Each object asks for gattd's own handle (`Handle`: the service declaration, the
///   characteristic value, the descriptor), so a bonded central's cache stays valid across
///   restarts and back ends; bluetoothd writes back the handle it chose where it moved one.
/// - GAP and GATT are bluetoothd's (it serves Device Name, Service Changed...), and so are
///   each characteristic's CCCD and Extended Properties descriptor (from the flags): gattd
///   exports neither.
/// - Paths name the handles (`/org/gattd/app/service000a/char000c/desc000e`), which are
///   stable, so the same database gives the same paths.
public struct BlueZGattApplication: Sendable, Equatable {
    /// The application's root: `RegisterApplication`'s argument and the ObjectManager.
    public static let root = "/org/gattd/app"

    public static let serviceInterface = "org.bluez.GattService1"
    public static let characteristicInterface = "org.bluez.GattCharacteristic1"
    public static let descriptorInterface = "org.bluez.GattDescriptor1"

    /// `GattManager1.RegisterApplication` (`register`) or `UnregisterApplication` of gattd's
    /// tree on adapter `index`.
    static func managerCall(register: Bool, adapter index: Int) -> DBusCall {
        DBusCall(
            destination: BlueZ.service, path: BlueZAdapter.path(index), interface: "org.bluez.GattManager1",
            member: register ? "RegisterApplication" : "UnregisterApplication",
            register ? [.objectPath(root), .properties([:])] : [.objectPath(root)])
    }

    /// One exported object: its path, the attribute it stands for, and its one interface's properties.
    public struct Object: Sendable, Equatable {
        public var path: String
        public var interface: String
        /// The service declaration, characteristic value or descriptor handle.
        public var handle: AttributeHandle
        public var properties: [String: DBusValue]
    }

    /// In handle order.
    public private(set) var objects: [Object] = []
    private var byPath: [String: Int] = [:]
    /// Characteristics by value handle (`updateGATT`, on every notification).
    private var characteristicByHandle: [AttributeHandle: Int] = [:]

    /// Where the tree asks bluetoothd to put gattd's handles: at them (`handleOffset` 0), or
    /// that far above them when bluetoothd's own services hold them.
    public private(set) var handleOffset: UInt16 = 0

    /// The offsets tried in turn (`BlueZPeripheralTransport`): gattd's handles, then the same
    /// layout 0x0100 and 0x0200 higher. Each is the same on every start, so a bonded central's
    /// cache stays valid as long as bluetoothd's own services do not change.
    public static let handleOffsets: [UInt16] = [0, 0x0100, 0x0200]

    public init(database: GATTDatabase, handleOffset: UInt16 = 0) {
        self.handleOffset = handleOffset
        var servicePaths: [Int: String] = [:]
        for (si, s) in database.services.enumerated() where !Self.isBluetoothdOwn(s.uuid) {
            servicePaths[si] = Self.root + "/service" + Self.hex(s.handle)
        }
        for (si, s) in database.services.enumerated() {
            guard let path = servicePaths[si] else { continue }
            append(Object(path: path, interface: Self.serviceInterface, handle: s.handle, properties: [
                "UUID": .string(s.uuid.canonicalString), "Primary": .boolean(s.isPrimary),
                "Includes": .objectPaths(s.includes.compactMap { servicePaths[$0] }), "Handle": .uint16(s.handle.rawValue &+ handleOffset),
            ]))
            for ci in s.characteristics {
                let c = database[ci]
                let charPath = path + "/char" + Self.hex(c.valueHandle)
                append(Object(path: charPath, interface: Self.characteristicInterface, handle: c.valueHandle, properties: [
                    "UUID": .string(c.uuid.canonicalString), "Service": .objectPath(path),
                    "Flags": .strings(BlueZGattFlags.characteristic(c)), "Handle": .uint16(c.valueHandle.rawValue &+ handleOffset),
                ]))
                for a in database.attributes where a.handle > c.valueHandle && a.handle <= c.endHandle {
                    guard case .descriptor = a.role, a.type != GATTUUID.extendedProperties else { continue }
                    append(Object(path: charPath + "/desc" + Self.hex(a.handle), interface: Self.descriptorInterface, handle: a.handle, properties: [
                        "UUID": .string(a.type.canonicalString), "Characteristic": .objectPath(charPath),
                        "Flags": .strings(BlueZGattFlags.descriptor(a.permissions)), "Handle": .uint16(a.handle.rawValue &+ handleOffset),
                    ]))
                }
            }
        }
    }

    /// GAP (0x1800) and GATT (0x1801): bluetoothd serves its own.
    static func isBluetoothdOwn(_ uuid: BluetoothUUID) -> Bool { uuid == GATTUUID.genericAccess || uuid == GATTUUID.genericAttribute }

    private static func hex(_ h: AttributeHandle) -> String {
        let s = String(h.rawValue, radix: 16)
        return String(repeating: "0", count: 4 - s.count) + s
    }

    private mutating func append(_ o: Object) {
        byPath[o.path] = objects.count
        if o.interface == Self.characteristicInterface { characteristicByHandle[o.handle] = objects.count }
        objects.append(o)
    }

    public func object(at path: String) -> Object? { byPath[path].map { objects[$0] } }

    /// `GetManagedObjects`' answer: `a{oa{sa{sv}}}`.
    public var managedObjects: DBusValue {
        .array(element: "{oa{sa{sv}}}", objects.map { o in
            .dictEntry(.objectPath(o.path), .array(element: "{sa{sv}}", [.dictEntry(.string(o.interface), .properties(o.properties))]))
        })
    }

    /// Whether the objects ask for gattd's handles (`Handle` non-zero).
    public var asksForHandles: Bool { objects.contains { $0.properties["Handle"] != .uint16(0) } }

    /// The same tree asking for no handle (`Handle` 0): bluetoothd picks them and writes them
    /// back. For when it could not place gattd's (its own services hold them).
    public func lettingBluetoothdPlace() -> BlueZGattApplication {
        var copy = self
        for i in copy.objects.indices { copy.objects[i].properties["Handle"] = .uint16(0) }
        return copy
    }

    /// The tree to register after bluetoothd refused this one (its own services, or another
    /// application, hold the handles it asks for): `database`'s at the next of `handleOffsets`,
    /// else asking for no handle. Nil: this one asks for none already.
    public func elsewhere(_ database: GATTDatabase) -> BlueZGattApplication? {
        guard asksForHandles else { return nil }
        let offsets = Self.handleOffsets
        guard let i = offsets.firstIndex(of: handleOffset), i + 1 < offsets.count else { return lettingBluetoothdPlace() }
        return BlueZGattApplication(database: database, handleOffset: offsets[i + 1])
    }

    /// bluetoothd moved an attribute (it set `Handle` to another value): records it, and says
    /// the handle asked for, or nil when nothing moved.
    public mutating func handleAssigned(_ handle: UInt16, at path: String) -> AttributeHandle? {
        guard let i = byPath[path], objects[i].properties["Handle"] != .uint16(handle) else { return nil }
        let asked = objects[i].properties["Handle"]
        objects[i].properties["Handle"] = .uint16(handle)
        // Asked for none: bluetoothd says where it placed it, which is no move when it is gattd's.
        return asked == .uint16(0) && handle == objects[i].handle.rawValue ? nil : objects[i].handle
    }

    /// The path of the characteristic whose value handle this is.
    func characteristicPath(valueHandle: AttributeHandle) -> String? {
        characteristicByHandle[valueHandle].map { objects[$0].path }
    }
}
