import GattDBus

/// Why the BlueZ back end cannot use bluetoothd, in words a user can act on.
public enum BlueZError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No system bus to connect to.
    case noBus(String)
    /// bluetoothd is not on the bus.
    case notRunning
    case noAdapter(Int, present: [String])
    /// A call bluetoothd refused or that failed on the way.
    case call(String, DBusError)

    public var description: String {
        switch self {
        case .noBus(let why): "cannot reach the system bus (\(why)): is dbus running?"
        case .notRunning: "bluetoothd is not running (org.bluez is not on the system bus): start it (systemctl start bluetooth), or use the kernel transport (--transport hci0)"
        case .noAdapter(let i, let present):
            "bluetoothd has no adapter hci\(i) (\(present.isEmpty ? "it has none: is the controller plugged in and not blocked (rfkill)?" : "it has \(present.joined(separator: ", "))"))"
        case .call(let what, let e): "\(what): \(e)"
        }
    }
}

extension BlueZError {
    /// A failed call, with bluetoothd's absence said as such.
    static func answer(_ what: String, _ e: DBusError) -> BlueZError {
        e.name == DBusError.serviceUnknownName || e.name == "org.freedesktop.DBus.Error.NameHasNoOwner" ? .notRunning : .call(what, e)
    }
}
