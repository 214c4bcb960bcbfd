import Dispatch
import GattDBus
import Synchronization

/// The BlueZ back end: gattd beside bluetoothd, over its D-Bus API (docs/bluez.md).
public enum BlueZ {
    /// bluetoothd's bus name.
    public static let service = "org.bluez"

    /// `GetManagedObjects` of bluetoothd's whole tree: adapters, their managers, devices.
    static let managedObjectsCall = DBusCall(destination: service, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")

    /// `GetNameOwner("org.bluez")`: bluetoothd's unique bus name (a new one is a bluetoothd that restarted).
    static let ownerCall = DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner", [.string(service)])

    /// Whether bluetoothd is on the system bus (`NameHasOwner("org.bluez")`): the default
    /// transport's question. Asked on the bus, not in /proc, which a hardened unit hides
    /// (`ProtectProc=invisible`). False without a system bus, or with no answer in `timeout`.
    public static func isRunning(bus: DBusConnection.Bus = .system, timeout: Duration = .seconds(2)) -> Bool {
        guard let c = try? DBusConnection(bus, description: "gattd-detect") else { return false }
        defer { c.close() }
        let answer = Mutex(false)
        let answered = DispatchSemaphore(value: 0)
        let call = DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameHasOwner", [.string(service)])
        c.call(call, timeout: timeout) { result in
            answer.withLock { $0 = (try? result.get())?.first?.bool ?? false }
            answered.signal()
        }
        // The reply comes on the bus thread (start-up only, before any loop runs); sd-bus
        // answers a call it timed out with an error, so this wait ends.
        _ = answered.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds) * 1000 + 500))
        return answer.withLock { $0 }
    }
}
