/// A D-Bus error: its name (`org.bluez.Error.Failed`) and message. Also what sd-bus's own
/// failures become (`errno` names, `System.Error.E…`).
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    /// An sd-bus call that returned `-errno`.
    init(errno code: Int32, _ what: String) {
        self.init("System.Error.\(code)", "\(what): \(errnoText(code))")
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    public static func unknownMethod(_ message: String) -> DBusError { DBusError("org.freedesktop.DBus.Error.UnknownMethod", message) }
    public static func unknownObject(_ message: String) -> DBusError { DBusError("org.freedesktop.DBus.Error.UnknownObject", message) }
    public static func unknownProperty(_ message: String) -> DBusError { DBusError("org.freedesktop.DBus.Error.UnknownProperty", message) }
    public static func invalidArgs(_ message: String) -> DBusError { DBusError("org.freedesktop.DBus.Error.InvalidArgs", message) }
    /// The bus went away (or was closed) before an answer came.
    public static func disconnected(_ message: String) -> DBusError { DBusError("org.freedesktop.DBus.Error.Disconnected", message) }
    /// Nobody owns the name a call went to (bluetoothd is not running).
    public static let serviceUnknownName = "org.freedesktop.DBus.Error.ServiceUnknown"
}

#if canImport(Glibc)
import Glibc
#endif

func errnoText(_ code: Int32) -> String {
    guard let s = strerror(code) else { return "errno \(code)" }
    return String(cString: s)
}
