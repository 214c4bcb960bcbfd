import Foundation
import GattBlueZ
import GattCore
import GattDBus
import Synchronization

/// A stand-in bluetoothd on a private bus, for the BlueZ transport's shell: it owns
/// `org.bluez`, exports one adapter (hci0) with a GATT manager, an advertising manager and
/// an agent manager, and acts as bluetoothd does towards an application (it reads the
/// registered tree and advertisements back, calls `ReadValue`, `WriteValue` and the agent).
/// What it was told is recorded for the test.
final class StandInBluetoothd: @unchecked Sendable {
    let connection: DBusConnection
    let adapterAddress = "00:AA:01:00:00:00"
    static let device = "/org/bluez/hci0/dev_11_22_33_44_55_66"

    struct Record {
        var application: [String: DBusValue] = [:]
        var applicationOwner: String?
        var registrations = 0
        var advertisements: [String: [String: DBusValue]] = [:]
        var agent: (path: String, capability: String)?
        var defaultAgent: String?
        var disconnected: [String] = []
        var removed: [String] = []
    }
    let record = Mutex(Record())
    /// Said when an application asks to be the default agent, and when an advertisement is registered.
    let defaultAgentRequested = Delivery<String>()
    let deviceRemoved = Delivery<String>()
    let advertisementRegistered = Delivery<String>()
    /// Handles below this are bluetoothd's own: an application asking for one is refused, as
    /// 5.66 refuses handles its GAP, GATT and Device Information services hold.
    let reservedBelow: Int
    /// How this bluetoothd answers `RegisterApplication`.
    enum Registration { case asBluetoothd, refused, unanswered }
    let registration: Registration
    /// Whether the adapter has a `GattManager1` (bluetoothd before 5.42 has none under that name).
    let gattManager: Bool
    /// Said when `RegisterApplication` is called.
    let registering = Delivery<Void>()
    private let heldCalls = Mutex<[DBusIncomingCall]>([])

    init(bus: PrivateBus, reservedBelow: Int = 0x0015, registration: Registration = .asBluetoothd, gattManager: Bool = true) throws {
        self.reservedBelow = reservedBelow
        self.registration = registration
        self.gattManager = gattManager
        connection = try bus.connect()
        let c = connection
        c.export(prefix: "/") { [weak self] call in
            guard let self else { return c.reply(call, .failure(.unknownObject("gone"))) }
            self.handle(call)
        }
        let owned = Delivery<Result<[DBusValue], DBusError>>()
        c.call(DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName", [.string("org.bluez"), .uint32(0)])) { owned.deliver($0) }
        guard case .success([.uint32(1)])? = owned.wait() else { throw DBusError("test", "org.bluez not owned") }
    }

    deinit { connection.close() }

    var objects: DBusValue {
        .array(element: "{oa{sa{sv}}}", [
            .dictEntry(.objectPath("/org/bluez/hci0"), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Adapter1"), .properties(["Address": .string(adapterAddress), "Powered": .boolean(true), "Alias": .string("stand-in")])),
            ] + (gattManager ? [.dictEntry(.string("org.bluez.GattManager1"), .properties([:]))] : []) + [
                .dictEntry(.string("org.bluez.LEAdvertisingManager1"), .properties(["SupportedInstances": .byte(4), "ActiveInstances": .byte(0)])),
            ])),
            .dictEntry(.objectPath(Self.device), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Device1"), .properties(["Address": .string("11:22:33:44:55:66"), "AddressType": .string("random"), "Connected": .boolean(false)])),
            ])),
        ])
    }

    private func handle(_ call: DBusIncomingCall) {
        let c = connection
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
            c.reply(call, .success([objects]))
        case ("org.freedesktop.DBus.Properties", "Set"):
            c.reply(call, .success([]))
        case ("org.bluez.GattManager1", "RegisterApplication") where registration != .asBluetoothd:
            record.withLock { $0.registrations += 1 }
            registering.deliver(())
            if registration == .refused { return c.reply(call, .failure(DBusError("org.bluez.Error.Failed", "Failed to create entry in database"))) }
            heldCalls.withLock { $0.append(call) }  // bluetoothd stops before it answers
        case ("org.bluez.GattManager1", "RegisterApplication"):
            registering.deliver(())
            guard let root = call.arguments.first?.string else { return c.reply(call, .failure(.invalidArgs("path"))) }
            // As bluetoothd does: read the application's tree from its owner, then answer.
            c.call(DBusCall(destination: call.sender, path: root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")) { result in
                guard let tree = (try? result.get())?.first?.dictionary else { return c.reply(call, .failure(DBusError("org.bluez.Error.Failed", "no tree"))) }
                let handles = tree.values.compactMap { $0.dictionary?.values.first?.dictionary?["Handle"]?.integer }
                if handles.contains(where: { $0 != 0 && $0 < self.reservedBelow }) {
                    return c.reply(call, .failure(DBusError("org.bluez.Error.Failed", "Failed to create entry in database")))
                }
                self.record.withLock {
                    $0.application = tree
                    $0.applicationOwner = call.sender
                    $0.registrations += 1
                }
                c.reply(call, .success([]))
            }
        case ("org.bluez.GattManager1", "UnregisterApplication"), ("org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement"):
            c.reply(call, .success([]))
        case ("org.bluez.LEAdvertisingManager1", "RegisterAdvertisement"):
            guard let path = call.arguments.first?.string else { return c.reply(call, .failure(.invalidArgs("path"))) }
            c.call(DBusCall(destination: call.sender, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll", [.string("org.bluez.LEAdvertisement1")])) { result in
                guard let props = (try? result.get())?.first?.dictionary else { return c.reply(call, .failure(DBusError("org.bluez.Error.InvalidArguments", "no properties"))) }
                self.record.withLock { $0.advertisements[path] = props.mapValues(\.unwrapped) }
                c.reply(call, .success([]))
                self.advertisementRegistered.deliver(path)
            }
        case ("org.bluez.AgentManager1", "RegisterAgent"):
            if let path = call.arguments.first?.string, let capability = call.arguments.last?.string { record.withLock { $0.agent = (path, capability) } }
            c.reply(call, .success([]))
        case ("org.bluez.AgentManager1", "RequestDefaultAgent"):
            record.withLock { $0.defaultAgent = call.arguments.first?.string }
            c.reply(call, .success([]))
            defaultAgentRequested.deliver(call.arguments.first?.string ?? "")
        case ("org.bluez.Adapter1", "RemoveDevice"):
            record.withLock { $0.removed.append(call.arguments.first?.string ?? "") }
            c.reply(call, .success([]))
            deviceRemoved.deliver(call.arguments.first?.string ?? "")
        case ("org.bluez.Device1", "Disconnect"):
            record.withLock { $0.disconnected.append(call.path) }
            c.reply(call, .success([]))
            connected(false)
        default:
            c.reply(call, .failure(.unknownMethod(call.description)))
        }
    }

    /// The device connects or disconnects (`PropertiesChanged` of `Device1`).
    func connected(_ on: Bool) {
        connection.emit(path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", [.string("org.bluez.Device1"), .properties(["Connected": .boolean(on)]), .strings([])])
    }

    /// The device's object goes (`InterfacesRemoved` of `Device1`): it left, or was removed.
    func deviceGone() {
        connection.emit(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved", [.objectPath(Self.device), .strings(["org.bluez.Device1"])])
    }

    /// The device is bonded now (`PropertiesChanged` of `Device1`: `Paired`, then `Bonded`).
    func bonded() {
        for p in ["Paired", "Bonded"] {
            connection.emit(path: Self.device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", [.string("org.bluez.Device1"), .properties([p: .boolean(true)]), .strings([])])
        }
    }

    /// Calls a method on the application's owner, as bluetoothd does; the answer comes back.
    func callApplication(path: String, interface: String, member: String, _ arguments: [DBusValue]) -> Delivery<Result<[DBusValue], DBusError>> {
        let got = Delivery<Result<[DBusValue], DBusError>>()
        let owner = record.withLock { $0.applicationOwner } ?? ""
        connection.call(DBusCall(destination: owner, path: path, interface: interface, member: member, arguments)) { got.deliver($0) }
        return got
    }

    /// The path of the exported object whose `UUID` is this (16-bit UUIDs, full form).
    func path(of uuid: UInt16) -> String? {
        let full = String(format: "0000%04x-0000-1000-8000-00805f9b34fb", uuid)
        return record.withLock { r in r.application.first { $0.value.dictionary?.values.first?.dictionary?["UUID"]?.string == full }?.key }
    }
}
