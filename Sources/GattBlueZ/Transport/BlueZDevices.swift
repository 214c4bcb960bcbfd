import GattCore
import GattDBus

/// The centrals bluetoothd reports on one adapter (`org.bluez.Device1` objects under
/// `/org/bluez/hciN`), as the connections the core knows: a `ConnectionID` per connected
/// device, `.connected`/`.disconnected` as `Connected` changes. Sans-I/O: fed the objects and
/// property changes the bus reports, it says which transport events follow.
public struct BlueZDevices: Sendable {
    public static let interface = "org.bluez.Device1"

    struct Device: Sendable {
        var properties: [String: DBusValue] = [:]
        var connection: ConnectionID?
    }

    let adapterPath: String
    private var devices: [String: Device] = [:]
    private var nextID: UInt16 = 1

    public init(adapter index: Int) { adapterPath = BlueZAdapter.path(index) }

    /// A device of this adapter (`/org/bluez/hciN/dev_…`).
    func owns(_ path: String) -> Bool { path.hasPrefix(adapterPath + "/dev_") && !path.dropFirst(adapterPath.count + 1).contains("/") }

    /// `GetManagedObjects`' devices: the connected ones come up.
    public mutating func load(_ objects: DBusValue) -> [TransportEvent] {
        var out: [TransportEvent] = []
        for (path, interfaces) in objects.dictionary ?? [:] where owns(path) {
            if let props = interfaces.dictionary?[Self.interface]?.dictionary { out += changed(path, props) }
        }
        return out
    }

    /// A `PropertiesChanged` (or `InterfacesAdded`) of `Device1` at `path`.
    public mutating func changed(_ path: String, _ properties: [String: DBusValue]) -> [TransportEvent] {
        guard owns(path) else { return [] }
        var d = devices[path] ?? Device()
        d.properties.merge(properties.mapValues(\.unwrapped)) { $1 }
        devices[path] = d
        guard let connected = properties["Connected"]?.bool else { return [] }
        return connected ? up(path) : down(path, reason: .remoteUserTerminatedConnection)
    }

    /// The device object went away (`InterfacesRemoved`).
    public mutating func removed(_ path: String) -> [TransportEvent] {
        let events = down(path, reason: .remoteUserTerminatedConnection)
        devices[path] = nil
        return events
    }

    /// The connection a `ReadValue`/`WriteValue` names by its `device` option; one bluetoothd
    /// has not yet said is connected (its `PropertiesChanged` may come after the first
    /// request) comes up now.
    public mutating func connection(for path: String?) -> (ConnectionID, [TransportEvent])? {
        guard let path, owns(path) else { return nil }
        if let id = devices[path]?.connection { return (id, []) }
        let events = up(path)
        return devices[path]?.connection.map { ($0, events) }
    }

    /// The device path of a connection (for `Device1.Disconnect`).
    public func path(of id: ConnectionID) -> String? { devices.first { $0.value.connection == id }?.key }

    /// Every connection is gone (bluetoothd or the bus went away).
    public mutating func reset() {
        devices = [:]
    }

    public var connectedCount: Int { devices.values.filter { $0.connection != nil }.count }

    private mutating func up(_ path: String) -> [TransportEvent] {
        var d = devices[path] ?? Device()
        guard d.connection == nil else { return [] }
        let id = ConnectionID(nextID)
        nextID = nextID == UInt16.max ? 1 : nextID + 1
        d.connection = id
        devices[path] = d
        let address = d.properties["Address"]?.string.flatMap(BluetoothAddress.init) ?? Self.address(fromPath: path) ?? .zero
        let type: BluetoothAddressType = d.properties["AddressType"]?.string == "random" ? .random : .public
        return [.connected(id, TransportPeer(address: address, addressType: type))]
    }

    private mutating func down(_ path: String, reason: HCIStatus) -> [TransportEvent] {
        guard let id = devices[path]?.connection else { return [] }
        devices[path]?.connection = nil
        return [.disconnected(id, reason: reason)]
    }

    /// `dev_00_AA_01_01_00_01` → 00:AA:01:01:00:01.
    static func address(fromPath path: String) -> BluetoothAddress? {
        guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
        return BluetoothAddress(String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 }))
    }
}
