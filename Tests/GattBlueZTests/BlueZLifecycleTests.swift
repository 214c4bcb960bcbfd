import GattBlueZ
import GattCore
import GattDBus
import GattTransport
import Testing

/// The BlueZ transport's life and its opening, call by call (a connection is a bare object,
/// the waiter a string); the adapter's power; and what bluetoothd's signals say.
@Suite struct BlueZLifecycleTests {
    final class Connection: Sendable {}
    typealias Life = BlueZLifecycle<Connection, String>

    static let owner: Result<[DBusValue], DBusError> = .success([.string(":1.7")])
    static let registerCall = DBusCall(
        destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1", member: "RegisterApplication",
        [.objectPath("/org/gattd/app"), .properties([:])])

    /// hci0 with a GATT manager, powered or not.
    static func objects(powered: Bool, gattManager: Bool = true) -> DBusValue {
        .array(element: "{oa{sa{sv}}}", [
            .dictEntry(.objectPath("/org/bluez/hci0"), .array(element: "{sa{sv}}", [
                .dictEntry(.string("org.bluez.Adapter1"), .properties(["Address": .string("00:AA:01:00:00:00"), "Powered": .boolean(powered)]))
            ] + (gattManager ? [.dictEntry(.string("org.bluez.GattManager1"), .properties([:]))] : []))),
        ])
    }

    struct Opening {
        var life = Life(adapter: 0)
        var application = BlueZGattApplication(database: BlueZGattApplicationTests.database)
        let c = Connection()

        mutating func answer(_ result: Result<[DBusValue], DBusError>, on c: Connection? = nil) -> Life.Next? {
            life.answered(c ?? self.c, result, application: &application, database: BlueZGattApplicationTests.database)
        }

        /// Opened, listening, bluetoothd's owner `owner` answered: the objects asked for.
        mutating func start(owner: String = ":1.7") {
            let opened = life.open(c, "opened")
            #expect(opened)
            _ = life.listening(c)
            _ = answer(.success([.string(owner)]))
        }
    }

    @Test func anOpenAsksCallByCallAndStaleAnswersSayNothing() throws {
        var o = Opening()
        let c = o.c
        let (opened, again) = (o.life.open(c, "opened"), o.life.open(Connection(), "again"))
        #expect(opened && !again)
        // Nothing is asked before the subscriptions are in place.
        #expect(o.answer(Self.owner) == nil)
        guard case .call(let owner, nil)? = o.life.listening(c) else { Issue.record("no owner call"); return }
        #expect(owner.member == "GetNameOwner" && owner.arguments == [.string("org.bluez")])
        #expect(o.life.listening(c) == nil)
        // Another connection's answer is stale.
        #expect(o.answer(Self.owner, on: Connection()) == nil)
        guard case .call(let objects, nil)? = o.answer(Self.owner) else { Issue.record("no objects call"); return }
        #expect(objects.member == "GetManagedObjects")
        #expect(o.life.power.bluetoothdOwner == ":1.7")
        guard case .call(let register, nil)? = o.answer(.success([Self.objects(powered: true)])) else { Issue.record("no register"); return }
        #expect(register == Self.registerCall)
        #expect(o.life.served == nil)
        guard case .opened("opened", let adapter, let devices)? = o.answer(.success([])) else { Issue.record("not opened"); return }
        #expect(adapter.address.description == "00:AA:01:00:00:00" && devices == Self.objects(powered: true))
        #expect(o.life.served?.connection === c && o.life.served?.adapter == adapter)
        // Open: no answer is awaited any more.
        #expect(o.answer(.success([])) == nil)
        #expect(o.life.openFailed(c) == nil)
    }

    @Test func anAdapterOffIsPoweredOnUnlessSomeoneElsePoweredItOff() throws {
        var o = Opening()
        o.start()
        guard case .call(let power, .poweringOn?)? = o.answer(.success([Self.objects(powered: false)])) else { Issue.record("not powered on"); return }
        #expect(power.member == "Set" && power.arguments == [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(true))])
        guard case .call(let register, nil)? = o.answer(.success([])) else { Issue.record("no register"); return }
        #expect(register == Self.registerCall)
        guard case .opened? = o.answer(.success([])) else { Issue.record("not opened"); return }
        // Someone powers it off while gattd serves: the transport is lost, and the next open waits.
        let (stale, off) = (o.life.poweredOff(Connection()), o.life.poweredOff(o.c))
        #expect(!stale && off)
        #expect(o.life.lost(o.c) == .lost)
        var again = Opening(life: o.life)
        again.start()
        guard case .fail(let message, .withBackoff)? = again.answer(.success([Self.objects(powered: false)])) else { Issue.record("powered on against the user"); return }
        #expect(message.contains("waits for it to be powered on"))
        #expect(again.life.openFailed(again.c) == "opened")
        // A bluetoothd that restarted (another owner) powered it off as it exited: on again.
        var restarted = Opening(life: again.life)
        restarted.start(owner: ":1.9")
        guard case .call(_, .poweringOn?)? = restarted.answer(.success([Self.objects(powered: false)])) else { Issue.record("not powered on"); return }
        // bluetoothd refusing to power it on fails the open.
        guard case .fail(let refused, .withBackoff)? = restarted.answer(.failure(DBusError("org.bluez.Error.Failed", "rfkill"))) else { Issue.record("no failure"); return }
        #expect(refused.contains("could not power hci0 on"))
    }

    @Test func whatBluetoothdLacksFailsTheOpenAsTheUserCanAct() {
        var noManager = Opening()
        noManager.start()
        guard case .fail(_, .never(exitCode: 69))? = noManager.answer(.success([Self.objects(powered: true, gattManager: false)])) else { Issue.record("no GattManager1"); return }
        var noAdapter = Opening()
        noAdapter.start()
        guard case .fail(let message, .whenAvailable)? = noAdapter.answer(.success([.array(element: "{oa{sa{sv}}}", [])])) else { Issue.record("no adapter"); return }
        #expect(message.contains("no adapter hci0"))
        var gone = Opening()
        gone.start()
        guard case .fail(_, .withBackoff)? = gone.answer(.failure(DBusError(DBusError.serviceUnknownName, "gone"))) else { Issue.record("bluetoothd gone"); return }
    }

    @Test func handlesBluetoothdHoldsAreAskedForHigherThenLeftToIt() throws {
        var o = Opening()
        o.start()
        _ = o.answer(.success([Self.objects(powered: true)]))
        let taken = DBusError("org.bluez.Error.Failed", "Failed to create entry in database")
        var offsets: [UInt16] = []
        for _ in 0..<2 {
            guard case .call(let call, .handlesTaken(taken)?)? = o.answer(.failure(taken)) else { Issue.record("not asked elsewhere"); return }
            #expect(call == Self.registerCall)
            offsets.append(o.application.handleOffset)
        }
        #expect(offsets == [0x0100, 0x0200])
        #expect(o.application.asksForHandles)
        guard case .call(_, .handlesTaken?)? = o.answer(.failure(taken)) else { Issue.record("not left to bluetoothd"); return }
        #expect(!o.application.asksForHandles)
        guard case .fail(let message, .withBackoff)? = o.answer(.failure(taken)) else { Issue.record("refused for ever"); return }
        #expect(message.contains("refused gattd's GATT application"))
    }

    @Test func goingAwayWhileOpeningFailsTheOpenAndWhileServingLosesIt() {
        var o = Opening()
        o.start()
        #expect(o.life.lost(Connection()) == nil)
        #expect(o.life.lost(o.c) == .openFailed)
        #expect(o.life.openFailed(o.c) == "opened")
        #expect(o.life.connection == nil && o.life.lost(o.c) == nil)
        var serving = Opening()
        serving.start()
        _ = serving.answer(.success([Self.objects(powered: true)]))
        _ = serving.answer(.success([]))
        #expect(serving.life.close() === serving.c)
        #expect(serving.life.connection == nil && serving.life.close() == nil)
    }

    @Test func thePowerStory() {
        var p = BlueZAdapterPower()
        #expect(p.opening(powered: false) == .powerOn)
        p.bluetoothd(":1.1")
        p.poweredOff()
        #expect(p.opening(powered: false) == .wait)
        p.bluetoothd(":1.1")  // the same bluetoothd: still someone else's doing
        #expect(p.opening(powered: false) == .wait)
        #expect(p.opening(powered: true) == .ready)  // they powered it on again
        #expect(p.opening(powered: false) == .powerOn)
        p.poweredOff()
        p.bluetoothdGone()
        #expect(p.opening(powered: false) == .powerOn)
    }

    @Test func signalsSayWhatChangedOnTheAdapter() {
        func signal(_ interface: String, _ member: String, path: String = "/", _ arguments: [DBusValue]) -> BlueZSignal? {
            BlueZSignal(interface, member, path: path, arguments, adapter: 0)
        }
        let device = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
        #expect(signal("org.freedesktop.DBus", "NameOwnerChanged", [.string("org.bluez"), .string(":1.7"), .string("")]) == .bluetoothdLeft)
        #expect(signal("org.freedesktop.DBus", "NameOwnerChanged", [.string("org.bluez"), .string(""), .string(":1.8")]) == nil)
        #expect(signal("org.freedesktop.DBus", "NameOwnerChanged", [.string("org.other"), .string(":1.7"), .string("")]) == nil)
        #expect(signal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [
            .objectPath(device), .array(element: "{sa{sv}}", [.dictEntry(.string("org.bluez.Device1"), .properties(["Connected": .boolean(true)]))]),
        ]) == .deviceAdded(path: device, ["Connected": .variant(.boolean(true))]))
        #expect(signal("org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [.objectPath(device), .array(element: "{sa{sv}}", [])]) == nil)
        #expect(signal("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [.objectPath("/org/bluez/hci0"), .strings([])]) == .adapterRemoved)
        #expect(signal("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [.objectPath(device), .strings([])]) == .deviceRemoved(path: device))
        let off: [DBusValue] = [.string("org.bluez.Adapter1"), .properties(["Powered": .boolean(false)]), .strings([])]
        #expect(signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: "/org/bluez/hci0", off) == .adapterPoweredOff)
        #expect(signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: "/org/bluez/hci1", off) == nil)
        #expect(signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: "/org/bluez/hci0", [
            .string("org.bluez.Adapter1"), .properties(["Powered": .boolean(true)]), .strings([]),
        ]) == nil)
        #expect(signal("org.freedesktop.DBus.Properties", "PropertiesChanged", path: device, [
            .string("org.bluez.Device1"), .properties(["Connected": .boolean(false)]), .strings([]),
        ]) == .deviceChanged(path: device, ["Connected": .variant(.boolean(false))]))
        #expect(BlueZSignal.subscriptions.map(\.member) == ["NameOwnerChanged", "InterfacesAdded", "InterfacesRemoved", "PropertiesChanged"])
    }
}
