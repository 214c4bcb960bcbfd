import GattCore
import GattDBus
import GattTransport

/// The BlueZ transport's life: closed; opening on a bus connection, one call at a time
/// (bluetoothd's owner, its objects, the adapter powered, the GATT application registered;
/// `Waiter` is told how the open ended); or serving on that connection and an adapter. Every
/// answer and signal comes with the connection it came on, and one that is not the current
/// connection's is stale. Sans-I/O, in the shape of `KernelAdvertisingDriver`: it returns the
/// call to make and is told its answer; `Connection` is the shell's bus connection, compared
/// by identity.
public struct BlueZLifecycle<Connection: AnyObject & Sendable, Waiter: Sendable>: Sendable {
    /// Where an open stands: whose answer comes next.
    public enum Step: Sendable, Equatable {
        /// The signal subscriptions being installed.
        case listening
        /// `GetNameOwner`: bluetoothd's unique name.
        case owner
        /// `GetManagedObjects`: the adapter and the devices.
        case objects
        /// `Adapter1.Powered` set true (then `RegisterApplication`).
        case powerOn(BlueZAdapter, objects: DBusValue)
        /// `RegisterApplication`.
        case register(BlueZAdapter, objects: DBusValue)
    }

    public enum State: Sendable {
        case closed
        case opening(Connection, Waiter, Step)
        case open(Connection, BlueZAdapter)
    }

    /// Why a call is made (for the log).
    public enum Note: Sendable, Equatable {
        /// The adapter was off: gattd powers it on.
        case poweringOn
        /// bluetoothd could not put the services at the handles they asked for (`error`): the
        /// application asks elsewhere now.
        case handlesTaken(DBusError)
    }

    /// What the shell does next while opening.
    public enum Next: Sendable {
        /// Make `call` on the connection and report its answer (`answered`).
        case call(DBusCall, Note?)
        /// The open failed: the shell closes the connection (`openFailed`).
        case fail(String, TransportOpenFailure.Retry)
        /// bluetoothd took the application: serving on `adapter`; the waiter to tell, and
        /// bluetoothd's objects (the devices connected already).
        case opened(Waiter, BlueZAdapter, objects: DBusValue)
    }

    public let index: Int
    public private(set) var state = State.closed
    /// Who powers the adapter: whether gattd powers it on as it opens.
    public private(set) var power = BlueZAdapterPower()

    public init(adapter index: Int) { self.index = index }

    /// The connection opening or serving.
    public var connection: Connection? {
        switch state {
        case .closed: nil
        case .opening(let c, _, _), .open(let c, _): c
        }
    }

    /// The connection and adapter served on, once open.
    public var served: (connection: Connection, adapter: BlueZAdapter)? {
        if case .open(let c, let a) = state { (c, a) } else { nil }
    }

    /// Whether `c` is the connection opening or serving (else what it reports is stale).
    public func isCurrent(_ c: Connection) -> Bool { connection === c }

    /// Opening on `c` (the shell installs the subscriptions first); false (nothing changes)
    /// unless closed.
    public mutating func open(_ c: Connection, _ waiter: Waiter) -> Bool {
        guard case .closed = state else { return false }
        state = .opening(c, waiter, .listening)
        return true
    }

    /// The subscriptions on `c` are installed: the first call. Nil: not opening on `c`.
    public mutating func listening(_ c: Connection) -> Next? {
        guard isCurrent(c), case .opening(_, let waiter, .listening) = state else { return nil }
        state = .opening(c, waiter, .owner)
        return .call(BlueZ.ownerCall, nil)
    }

    /// The answer to the open's call on `c`; `application` is asked elsewhere when bluetoothd
    /// could not place it (`database`: what it is built from). Nil: stale.
    public mutating func answered(
        _ c: Connection, _ result: Result<[DBusValue], DBusError>, application: inout BlueZGattApplication, database: GATTDatabase
    ) -> Next? {
        guard isCurrent(c), case .opening(_, let waiter, let step) = state else { return nil }
        switch step {
        case .listening:
            return nil
        case .owner:
            if let owner = (try? result.get())?.first?.string { power.bluetoothd(owner) }
            state = .opening(c, waiter, .objects)
            return .call(BlueZ.managedObjectsCall, nil)
        case .objects:
            do throws(BlueZError) {
                let objects = try result.mapError { BlueZError.answer("asking bluetoothd for its adapters", $0) }.get().first ?? .array(element: "{oa{sa{sv}}}", [])
                let adapter = try BlueZAdapter.find(index, in: objects)
                guard adapter.gattManager else { return .fail("bluetoothd serves no GATT applications on hci\(index) (no GattManager1)", .never(exitCode: 69)) }
                switch power.opening(powered: adapter.powered) {
                case .ready:
                    state = .opening(c, waiter, .register(adapter, objects: objects))
                    return .call(BlueZGattApplication.managerCall(register: true, adapter: index), nil)
                case .wait:
                    return .fail("hci\(index) is powered off; gattd waits for it to be powered on (bluetoothctl power on)", .withBackoff)
                case .powerOn:
                    state = .opening(c, waiter, .powerOn(adapter, objects: objects))
                    return .call(BlueZAdapter.powerOnCall(index), .poweringOn)
                }
            } catch {
                // bluetoothd gone: its power-off was its exit, not a user's.
                if error == .notRunning { power.bluetoothdGone() }
                return .fail(error.description, error == .notRunning ? .withBackoff : .whenAvailable)
            }
        case .powerOn(let adapter, let objects):
            if case .failure(let e) = result { return .fail("bluetoothd could not power hci\(index) on: \(e)", .withBackoff) }
            state = .opening(c, waiter, .register(adapter, objects: objects))
            return .call(BlueZGattApplication.managerCall(register: true, adapter: index), nil)
        case .register(let adapter, let objects):
            if case .failure(let e) = result {
                guard let elsewhere = application.elsewhere(database) else { return .fail("bluetoothd refused gattd's GATT application: \(e)", .withBackoff) }
                application = elsewhere
                return .call(BlueZGattApplication.managerCall(register: true, adapter: index), .handlesTaken(e))
            }
            state = .open(c, adapter)
            return .opened(waiter, adapter, objects: objects)
        }
    }

    /// The open on `c` failed: closed; the waiter to tell. Nil: not opening on `c`.
    public mutating func openFailed(_ c: Connection) -> Waiter? {
        guard isCurrent(c), case .opening(_, let waiter, _) = state else { return nil }
        state = .closed
        return waiter
    }

    public enum Loss: Sendable, Equatable {
        /// It went while opening: the open failed.
        case openFailed
        /// It went while serving: closed, and everything served on it is gone.
        case lost
    }

    /// `c` went away (the bus, bluetoothd, the adapter). Nil: `c` is stale.
    public mutating func lost(_ c: Connection) -> Loss? {
        guard isCurrent(c) else { return nil }
        if case .opening = state { return .openFailed }
        state = .closed
        return .lost
    }

    /// The adapter was powered off: true when serving on it (the shell then loses `c`),
    /// and gattd waits for whoever powered it off.
    public mutating func poweredOff(_ c: Connection) -> Bool {
        guard isCurrent(c), case .open = state else { return false }
        power.poweredOff()
        return true
    }

    /// Closing: the connection to close, if one was opening or serving.
    public mutating func close() -> Connection? {
        defer { state = .closed }
        return connection
    }
}
