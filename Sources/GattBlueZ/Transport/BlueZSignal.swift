import GattDBus

/// What a signal the BlueZ transport listens to says about gattd's adapter (hci`index`):
/// bluetoothd leaving the bus, the adapter going, or its devices changing. Sans-I/O: read
/// off the signals the transport subscribes to (`subscriptions`).
public enum BlueZSignal: Sendable, Equatable {
    /// bluetoothd's name lost its owner (`NameOwnerChanged`): it left the bus.
    case bluetoothdLeft
    /// bluetoothd removed the adapter's object.
    case adapterRemoved
    /// The adapter's `Powered` became false.
    case adapterPoweredOff
    /// A `Device1` object added (`InterfacesAdded`), with its properties.
    case deviceAdded(path: String, [String: DBusValue])
    /// A `Device1` object's properties changed.
    case deviceChanged(path: String, [String: DBusValue])
    /// An object removed (`InterfacesRemoved`) other than the adapter's.
    case deviceRemoved(path: String)

    /// The matches the transport installs (sender, interface, member): the bus's
    /// `NameOwnerChanged`, bluetoothd's `InterfacesAdded`, `InterfacesRemoved`, and last its
    /// `PropertiesChanged` (whose installation starts the open).
    public static let subscriptions: [(sender: String, interface: String, member: String)] = [
        ("org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged"),
        (BlueZ.service, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"),
        (BlueZ.service, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"),
        (BlueZ.service, "org.freedesktop.DBus.Properties", "PropertiesChanged"),
    ]

    /// What signal `s` (one of `subscriptions`) says about adapter `index`; nil: nothing.
    public init?(_ s: DBusSignal, adapter index: Int) { self.init(s.interface, s.member, path: s.path, s.arguments, adapter: index) }

    /// What signal `interface.member` from `path` says about adapter `index`; nil: nothing.
    public init?(_ interface: String, _ member: String, path: String, _ a: [DBusValue], adapter index: Int) {
        switch (interface, member) {
        case ("org.freedesktop.DBus", "NameOwnerChanged"):
            guard a.first?.string == BlueZ.service, a.count == 3, a[2].string == "" else { return nil }
            self = .bluetoothdLeft
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            // A central bluetoothd did not know before: its object comes with Connected already true.
            guard a.count == 2, let object = a[0].string, let device = a[1].dictionary?[BlueZDevices.interface]?.dictionary else { return nil }
            self = .deviceAdded(path: object, device)
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard let object = a.first?.string else { return nil }
            self = object == BlueZAdapter.path(index) ? .adapterRemoved : .deviceRemoved(path: object)
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard a.count >= 2, let changedInterface = a[0].string, let changed = a[1].dictionary else { return nil }
            switch changedInterface {
            case BlueZDevices.interface: self = .deviceChanged(path: path, changed)
            case "org.bluez.Adapter1" where path == BlueZAdapter.path(index) && changed["Powered"]?.bool == false: self = .adapterPoweredOff
            default: return nil
            }
        default:
            return nil
        }
    }
}
