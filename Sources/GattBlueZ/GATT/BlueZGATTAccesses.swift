import GattCore
import GattDBus

/// bluetoothd's calls on the attributes of gattd's application (`BlueZGattApplication.route`'s
/// `.attribute`): what the core hears of each, and the reads and writes handed to it as
/// GATT-level accesses (`TransportEvent.gattAccess`), waiting under their `GATTAccessID` for
/// its answer (`answerGATT`). Sans-I/O: `Call` is whatever the shell answers (a D-Bus method
/// call); this value says what each is answered.
public struct BlueZGATTAccesses<Call: Sendable>: Sendable {
    private struct Waiting: Sendable {
        let call: Call
        let read: Bool
    }

    private var waiting: [GATTAccessID: Waiting] = [:]
    private var next: UInt64 = 1

    public init() {}

    /// The accesses waiting for the core's answer.
    public var count: Int { waiting.count }

    /// What a request is answered now (nil: it waits for the core) and what the core hears.
    public struct Handling {
        public var reply: Result<[DBusValue], DBusError>?
        public var events: [TransportEvent]
    }

    /// A request bluetoothd made on an attribute, for a central of `devices` (a read or write
    /// names it by its `device` option; one bluetoothd has not said is connected comes up).
    public mutating func request(_ request: BlueZAttributeRequest, _ call: Call, devices: inout BlueZDevices) -> Handling {
        switch request {
        case .read(let h, let o):
            return access(.read(h, offset: o.offset), read: true, device: o.device, call, &devices)
        case .write(let h, let value, let o):
            // A Prepare Write asking to be authorized: nothing is written yet, and gattd
            // authorizes every one (the write itself is checked when it comes).
            if o.prepareAuthorize { return Handling(reply: .success([]), events: []) }
            return access(.write(h, value, offset: o.offset, withResponse: o.type != "command"), read: false, device: o.device, call, &devices)
        case .startNotify(let h):
            return Handling(reply: .success([]), events: [.gattSubscribers(h, true)])
        case .stopNotify(let h):
            return Handling(reply: .success([]), events: [.gattSubscribers(h, false)])
        case .confirm(let h):
            // bluetoothd's `Confirm` names no device (5.66): the confirmation is the central's
            // when one is connected; with several, which one confirmed is unknown.
            let connected = devices.connectedIDs
            return Handling(reply: .success([]), events: connected.count == 1 ? [.gattConfirmed(connected[0], h)] : [])
        }
    }

    private mutating func access(_ a: GATTAccess, read: Bool, device: String?, _ call: Call, _ devices: inout BlueZDevices) -> Handling {
        guard let (id, events) = devices.connection(for: device) else {
            return Handling(reply: .failure(BlueZGattError.dbusError(.unlikelyError)), events: [])
        }
        let access = GATTAccessID(next)
        next += 1
        waiting[access] = Waiting(call: call, read: read)
        return Handling(reply: nil, events: events + [.gattAccess(id, access, a)])
    }

    /// The core answered access `id`: the call it answers, and the reply (a read's value, a
    /// write's nothing, an ATT error as the D-Bus error bluetoothd turns back into it). Nil:
    /// no such access waits.
    public mutating func answer(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>) -> (call: Call, reply: Result<[DBusValue], DBusError>)? {
        guard let w = waiting.removeValue(forKey: id) else { return nil }
        switch result {
        case .success(let value): return (w.call, .success(w.read ? [.bytes(value)] : []))
        case .failure(let error): return (w.call, .failure(BlueZGattError.dbusError(error)))
        }
    }

    /// Every access still waiting, ended (bluetoothd or the bus went away): the calls, each
    /// answered Unlikely Error.
    public mutating func dropAll() -> [(call: Call, reply: DBusError)] {
        var ended: [(call: Call, reply: DBusError)] = []
        for id in waiting.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            if let w = waiting.removeValue(forKey: id) { ended.append((w.call, BlueZGattError.dbusError(.unlikelyError))) }
        }
        return ended
    }
}
