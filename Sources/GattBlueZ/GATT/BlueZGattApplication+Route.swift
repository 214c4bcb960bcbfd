import GattCore
import GattDBus

extension BlueZGattApplication {
    /// Routes one method call on the application's objects (sans-I/O).
    public mutating func route(path: String, interface: String, member: String, arguments: [DBusValue]) -> BlueZRoute {
        switch (interface, member) {
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
            guard path == Self.root else { return .fail(.unknownMethod("\(path) is no object manager")) }
            return .reply([managedObjects])
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard let o = object(at: path) else { return .fail(.unknownObject(path)) }
            return .reply([.properties(arguments.first?.string == o.interface ? o.properties : [:])])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard let o = object(at: path) else { return .fail(.unknownObject(path)) }
            guard arguments.count == 2, arguments[0].string == o.interface, let name = arguments[1].string, let v = o.properties[name] else {
                return .fail(.unknownProperty("\(path) has no such property"))
            }
            return .reply([.variant(v)])
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard object(at: path) != nil else { return .fail(.unknownObject(path)) }
            guard arguments.count == 3, arguments[1].string == "Handle", case .uint16(let given)? = arguments[2].unwrapped as DBusValue? else {
                return .fail(DBusError("org.freedesktop.DBus.Error.PropertyReadOnly", "only Handle can be set"))
            }
            guard let asked = handleAssigned(given, at: path) else { return .reply([]) }
            return .moved(path: path, asked: asked, given: given)
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return .reply([.string(introspection(path))])
        default:
            break
        }
        guard let o = object(at: path), o.interface == interface, o.interface != Self.serviceInterface else {
            return .fail(.unknownMethod("\(interface).\(member) on \(path)"))
        }
        switch member {
        case "ReadValue":
            return .attribute(.read(o.handle, BlueZAccessOptions(arguments.first)))
        case "WriteValue":
            guard let value = arguments.first?.byteArray else { return .fail(.invalidArgs("WriteValue takes ay, a{sv}")) }
            return .attribute(.write(o.handle, value, BlueZAccessOptions(arguments.dropFirst().first)))
        case "StartNotify" where interface == Self.characteristicInterface: return .attribute(.startNotify(o.handle))
        case "StopNotify" where interface == Self.characteristicInterface: return .attribute(.stopNotify(o.handle))
        case "Confirm" where interface == Self.characteristicInterface: return .attribute(.confirm(o.handle))
        default: return .fail(.unknownMethod("\(interface).\(member) on \(path)"))
        }
    }

    /// Enough introspection XML for `busctl tree`/`gdbus introspect`: the node's interface and children.
    func introspection(_ path: String) -> String {
        let prefix = path == "/" ? "/" : path + "/"
        var children = Set<String>()
        for o in objects where o.path.hasPrefix(prefix) {
            if let name = o.path.dropFirst(prefix.count).split(separator: "/").first { children.insert(String(name)) }
        }
        if Self.root.hasPrefix(prefix), let name = Self.root.dropFirst(prefix.count).split(separator: "/").first { children.insert(String(name)) }
        var xml = "<node>"
        if path == Self.root { xml += "<interface name=\"org.freedesktop.DBus.ObjectManager\"/>" }
        if let o = object(at: path) { xml += "<interface name=\"\(o.interface)\"/><interface name=\"org.freedesktop.DBus.Properties\"/>" }
        for c in children.sorted() { xml += "<node name=\"\(c)\"/>" }
        return xml + "</node>"
    }
}
