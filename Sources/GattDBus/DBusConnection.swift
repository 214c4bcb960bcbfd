import CSystemdBus
import Synchronization

/// One connection to a D-Bus bus (the system bus, where bluetoothd is), through sd-bus.
///
/// sd-bus objects belong to one thread: the connection runs its own (`DBusBusThread`), which
/// owns the bus, marshals, and runs every handler given here. Callers on other threads (the
/// BlueZ back end's event loop) only queue work for it; handlers hop back to their own loop.
/// A handler must not call `close()`.
public final class DBusConnection: Sendable {
    /// Which bus.
    public enum Bus: Sendable, Equatable {
        /// The system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else sd-bus's default socket).
        case system
        /// A bus at an address (`unix:path=...`): tests run a private one.
        case address(String)
    }

    let thread: DBusBusThread

    /// Connects (the socket; authentication and `Hello` finish on the bus thread). Throws
    /// when there is no bus to connect to.
    public init(_ bus: Bus, description: String = "gattd") throws(DBusError) {
        var b: OpaquePointer?
        switch bus {
        case .system:
            let r = sd_bus_open_system(&b)
            if r < 0 { throw DBusError(errno: -r, "connecting to the system bus") }
        case .address(let address):
            var r = sd_bus_new(&b)
            if r >= 0 { r = address.withCString { sd_bus_set_address(b, $0) } }
            if r >= 0 { r = sd_bus_set_bus_client(b, 1) }
            if r >= 0 { r = sd_bus_start(b) }
            if r < 0 {
                sd_bus_unref(b)
                throw DBusError(errno: -r, "connecting to \(address)")
            }
        }
        guard let b else { throw DBusError(errno: 22, "connecting to the bus") }
        _ = description.withCString { sd_bus_set_description(b, $0) }
        thread = try DBusBusThread(bus: b)
    }

    /// Called once, on the bus thread, when the bus connection breaks (not after `close`).
    public func onDisconnect(_ handler: @escaping @Sendable (DBusError) -> Void) {
        thread.enqueue { t in t.disconnectHandler = handler }
    }

    /// Calls a method; `reply` runs on the bus thread with its values or its error (a
    /// `disconnected` error when the bus goes first). `timeout` nil: sd-bus's default (25 s).
    public func call(_ call: DBusCall, timeout: Duration? = nil, reply: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        thread.enqueue { t in t.call(call, timeout: timeout, reply: reply) }
    }

    /// Serves every method call to `prefix` and the paths below it with `handler` (on the bus
    /// thread); each call is answered with `reply`.
    public func export(prefix: String, handler: @escaping @Sendable (DBusIncomingCall) -> Void) {
        thread.enqueue { t in t.export(prefix: prefix, handler: handler) }
    }

    /// Answers a call `export`'s handler got: its return values, or an error.
    public func reply(_ call: DBusIncomingCall, _ result: Result<[DBusValue], DBusError>) {
        thread.enqueue { t in t.reply(call, result) }
    }

    /// Sends a signal from one of our objects (`PropertiesChanged`, `InterfacesAdded`...).
    public func emit(path: String, interface: String, member: String, _ arguments: [DBusValue]) {
        thread.enqueue { t in t.emit(path: path, interface: interface, member: member, arguments) }
    }

    /// Runs `handler` (on the bus thread) for each signal that matches; nil matches anything.
    /// `installed` runs once the match is in place on the bus (register listeners before
    /// acting on what they hear), with an error when it could not be added.
    public func subscribe(
        sender: String?, path: String? = nil, interface: String?, member: String?,
        installed: (@Sendable (DBusError?) -> Void)? = nil, handler: @escaping @Sendable (DBusSignal) -> Void
    ) {
        thread.enqueue { t in t.subscribe(sender: sender, path: path, interface: interface, member: member, installed: installed, handler: handler) }
    }

    /// Our unique name on the bus (`:1.42`), once `Hello` is answered.
    public func uniqueName(_ handler: @escaping @Sendable (Result<String, DBusError>) -> Void) {
        thread.enqueue { t in t.uniqueName(handler) }
    }

    /// Closes the connection and ends the bus thread (queued work runs first). Not from a handler.
    public func close() { thread.stop() }
}
