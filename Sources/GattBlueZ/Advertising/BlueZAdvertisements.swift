import GattCore
import GattDBus

/// The advertising sets gattd registers with bluetoothd, each an `LEAdvertisement1` object
/// (`BlueZAdvertisement`) at a path of its own: which to register and unregister as the core's
/// sets change (a set whose payloads changed is registered again at a new path), what
/// bluetoothd's calls on the objects are answered, and what the core hears as bluetoothd
/// answers. Sans-I/O, in the shape of `KernelAdvertisingDriver`: it returns the
/// `LEAdvertisingManager1` calls to make and is told how each registration ended.
public struct BlueZAdvertisements: Sendable {
    /// Where the advertisement objects live.
    public static let root = "/org/gattd/advertisement"

    /// One `LEAdvertisingManager1` call.
    public enum Operation: Sendable, Equatable {
        case register(path: String)
        case unregister(path: String)

        /// The call on adapter `index`'s advertising manager.
        public func call(adapter index: Int) -> DBusCall {
            let (member, arguments): (String, [DBusValue]) =
                switch self {
                case .register(let path): ("RegisterAdvertisement", [.objectPath(path), .properties([:])])
                case .unregister(let path): ("UnregisterAdvertisement", [.objectPath(path)])
                }
            return DBusCall(destination: BlueZ.service, path: BlueZAdapter.path(index), interface: "org.bluez.LEAdvertisingManager1", member: member, arguments)
        }
    }

    /// One set's object, and whether bluetoothd took it.
    public struct Registration: Sendable, Equatable {
        public var path: String
        public var set: AdvertisingSet
        public var registered = false
    }

    /// The sets registered or being registered, by set id.
    private var sets: [String: Registration] = [:]
    private var next = 0

    public init() {}

    /// The registration of set `id`, if it is registered or being registered.
    public func registration(of id: String) -> Registration? { sets[id] }

    /// The core's sets now: each set no longer wanted, or changed, is unregistered (its end
    /// said when bluetoothd had taken it), then each new or changed one registered at a new path.
    public mutating func want(_ wanted: [AdvertisingSet]) -> (operations: [Operation], events: [TransportEvent]) {
        let byID = Dictionary(wanted.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var out = unregister(sets.keys.sorted().filter { byID[$0] != sets[$0]?.set })
        for set in wanted where sets[set.id] == nil {
            let path = Self.root + "/set\(next)"
            next += 1
            sets[set.id] = Registration(path: path, set: set)
            out.operations.append(.register(path: path))
        }
        return out
    }

    /// bluetoothd answered the `RegisterAdvertisement` of `path` (`refused`: its error). An
    /// answer for a registration unregistered since says nothing.
    public mutating func registered(_ path: String, refused: DBusError?) -> [TransportEvent] {
        guard let id = id(at: path) else { return [] }
        if let refused {
            sets[id] = nil
            return [.advertisingRefused(whileConnected: false, reason: "bluetoothd: \(refused)", set: id)]
        }
        sets[id]?.registered = true
        return [.advertisingChanged(true, set: id)]
    }

    /// Every set unregistered, in order of id (the transport closes).
    public mutating func unregisterAll() -> (operations: [Operation], events: [TransportEvent]) { unregister(sets.keys.sorted()) }

    /// Everything forgotten: bluetoothd or the bus went away, and the advertisements with it.
    public mutating func reset() { sets = [:] }

    /// What a call bluetoothd makes on an advertisement object is answered.
    public enum Answer: Sendable, Equatable {
        case reply(Result<[DBusValue], DBusError>)
        /// `Release` (answered with success): bluetoothd dropped set `set`; what the core hears.
        case released(set: String, [TransportEvent])
    }

    /// bluetoothd reading an advertisement's properties (`Get`, `GetAll`), or releasing it.
    public mutating func route(path: String, interface: String, member: String, arguments: [DBusValue]) -> Answer {
        guard let id = id(at: path), let r = sets[id] else { return .reply(.failure(.unknownObject(path))) }
        let props = BlueZAdvertisement.properties(r.set)
        switch (interface, member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            return .reply(.success([.properties(arguments.first?.string == BlueZAdvertisement.interface ? props : [:])]))
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard arguments.count == 2, let v = arguments[1].string.flatMap({ props[$0] }) else { return .reply(.failure(.unknownProperty(path))) }
            return .reply(.success([.variant(v)]))
        case (BlueZAdvertisement.interface, "Release"):
            sets[id] = nil
            return .released(set: id, r.registered ? [.advertisingChanged(false, set: id)] : [])
        default:
            return .reply(.failure(.unknownMethod("\(interface).\(member) on \(path)")))
        }
    }

    private mutating func unregister(_ ids: [String]) -> (operations: [Operation], events: [TransportEvent]) {
        var out: (operations: [Operation], events: [TransportEvent]) = ([], [])
        for id in ids {
            guard let r = sets.removeValue(forKey: id) else { continue }
            out.operations.append(.unregister(path: r.path))
            if r.registered { out.events.append(.advertisingChanged(false, set: id)) }
        }
        return out
    }

    private func id(at path: String) -> String? { sets.first { $0.value.path == path }?.key }
}
