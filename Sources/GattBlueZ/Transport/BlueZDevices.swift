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
        /// What gattd's agent was asked or shown while this device paired (how it paired:
        /// bluetoothd does not say otherwise).
        var pairingQuestion: SecurityManagerEvent?
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
            // (Bonds made before: not news.)
            if let props = interfaces.dictionary?[Self.interface]?.dictionary { out += added(path, props) }
        }
        return out
    }

    /// A `Device1` object bluetoothd added (`InterfacesAdded`: a central it did not know
    /// connected): its connection comes up. (A bond is news only as a change.)
    public mutating func added(_ path: String, _ properties: [String: DBusValue]) -> [TransportEvent] {
        merged(path, properties)
    }

    /// A `PropertiesChanged` of `Device1` at `path`.
    public mutating func changed(_ path: String, _ properties: [String: DBusValue]) -> [TransportEvent] {
        merged(path, properties) + bonded(path, properties)
    }

    /// The properties kept, and the connection that came or went.
    private mutating func merged(_ path: String, _ properties: [String: DBusValue]) -> [TransportEvent] {
        guard owns(path) else { return [] }
        var d = devices[path] ?? Device()
        d.properties.merge(properties.mapValues(\.unwrapped)) { $1 }
        devices[path] = d
        guard let connected = properties["Connected"]?.bool else { return [] }
        return connected ? up(path) : down(path, reason: .remoteUserTerminatedConnection)
    }

    /// Remembers what gattd's agent asked `path`'s user (or showed) as it paired.
    public mutating func asked(_ path: String, _ question: SecurityManagerEvent) {
        guard owns(path) else { return }
        devices[path, default: Device()].pairingQuestion = question
    }

    /// A connected device that bluetoothd keeps a bond with from now on (`Bonded` became true,
    /// or `Paired` from a bluetoothd without `Bonded`, before 5.66): its bond. bluetoothd
    /// keeps the keys; what the bond says of how it paired is what gattd's agent saw (a
    /// question needs an authenticated method; a numeric comparison, Secure Connections).
    private func bonded(_ path: String, _ changed: [String: DBusValue]) -> [TransportEvent] {
        guard let d = devices[path], let id = d.connection else { return [] }
        let hasBonded = d.properties["Bonded"] != nil
        guard (hasBonded ? changed["Bonded"] : changed["Paired"])?.unwrapped.bool == true else { return [] }
        let (address, type) = Self.peer(path, d)
        let authenticated, numericComparison: Bool
        switch d.pairingQuestion {
        case .numericComparison?: (authenticated, numericComparison) = (true, true)
        case .passkeyRequest?, .displayPasskey?: (authenticated, numericComparison) = (true, false)
        default: (authenticated, numericComparison) = (false, false)
        }
        let bond = Bond(address: address, addressType: type, longTermKey: nil, keySize: 16, authenticated: authenticated, secureConnections: numericComparison)
        return [.pairing(id, .pairingComplete(bond, bonded: true))]
    }

    /// The device path bluetoothd gives the central at `address` on this adapter.
    public func path(of address: BluetoothAddress) -> String {
        devices.first { $0.value.properties["Address"]?.string.flatMap(BluetoothAddress.init) == address }?.key
            ?? "\(adapterPath)/dev_\(String(address.description.map { $0 == ":" ? "_" : $0 }))"
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

    /// The connection of the device at `address` (an L2CAP channel's peer), brought up if
    /// bluetoothd has not said it connected yet.
    public mutating func connection(address: BluetoothAddress) -> (ConnectionID, [TransportEvent])? {
        connection(for: path(of: address))
    }

    /// The device path of a connection (for `Device1.Disconnect`).
    public func path(of id: ConnectionID) -> String? { devices.first { $0.value.connection == id }?.key }

    /// Every connection is gone (bluetoothd or the bus went away).
    public mutating func reset() {
        devices = [:]
    }

    public var connectedCount: Int { connectedIDs.count }

    /// The connections of the devices connected now.
    public var connectedIDs: [ConnectionID] { devices.values.compactMap(\.connection).sorted { $0.rawValue < $1.rawValue } }

    private mutating func up(_ path: String) -> [TransportEvent] {
        var d = devices[path] ?? Device()
        guard d.connection == nil else { return [] }
        let id = ConnectionID(nextID)
        nextID = nextID == UInt16.max ? 1 : nextID + 1
        d.connection = id
        devices[path] = d
        let (address, type) = Self.peer(path, d)
        return [.connected(id, TransportPeer(address: address, addressType: type))]
    }

    private static func peer(_ path: String, _ d: Device) -> (BluetoothAddress, BluetoothAddressType) {
        let address = d.properties["Address"]?.string.flatMap(BluetoothAddress.init) ?? Self.address(fromPath: path) ?? .zero
        return (address, d.properties["AddressType"]?.string == "random" ? .random : .public)
    }

    private mutating func down(_ path: String, reason: HCIStatus) -> [TransportEvent] {
        guard let id = devices[path]?.connection else { return [] }
        devices[path]?.connection = nil
        devices[path]?.pairingQuestion = nil
        return [.disconnected(id, reason: reason)]
    }

    /// `dev_00_AA_01_01_00_01` → 00:AA:01:01:00:01.
    static func address(fromPath path: String) -> BluetoothAddress? {
        guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return nil }
        return BluetoothAddress(String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 }))
    }
}
