import GattCore
import GattDBus
import GattHost
import GattTransport
import Logging
import NIOCore

/// The BlueZ back end as the daemon's transport (docs/bluez.md): bluetoothd runs the
/// controller, the links, SMP and ATT; gattd registers its database as a GATT application
/// and its advertising sets as advertisements over D-Bus, and answers bluetoothd's
/// `ReadValue`/`WriteValue` through the core's GATT-level access (`TransportEvent.gattAccess`),
/// above the ATT server. Connections come from `Device1.Connected`.
///
/// An I/O shell: what to register and how calls and devices map (`BlueZGattApplication`,
/// `BlueZAdvertisement`, `BlueZDevices`) are sans-I/O values; this class moves their
/// messages. Its state is confined to `eventLoop`; bus callbacks hop onto it.
public final class BlueZPeripheralTransport: SelfDrivenTransport, PacketCapturing, @unchecked Sendable {
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    let index: Int
    let bus: DBusConnection.Bus
    let logger: Logger

    /// Closed, opening (its promise), or serving on a bus connection.
    enum State {
        case closed
        case opening(DBusConnection, EventLoopPromise<Void>)
        case open(DBusConnection)
    }
    var state = State.closed
    var application: BlueZGattApplication
    /// The database `application` is built from (`serveDatabase`).
    var database = GATTDatabase(deviceName: "gattd", services: [])
    var devices: BlueZDevices
    /// bluetoothd's calls waiting for the core's answer, and whether each is a read.
    var waiting: [GATTAccessID: (call: DBusIncomingCall, read: Bool)] = [:]
    var nextAccess: UInt64 = 1
    /// The advertisements registered or being registered, by set id.
    var advertisements: [String: BlueZAdvertisementState] = [:]
    var nextAdvertisement = 0
    /// What the adapter offered when the transport opened.
    var adapter: BlueZAdapter?
    /// The config's `security`: the agent's IO capability, whether Just Works asks the user.
    var security: SecurityManagerConfiguration
    /// Someone powered the adapter off while gattd served (a user, rfkill): gattd waits for
    /// it to come back rather than powering it on again. Not when bluetoothd itself stopped
    /// (it powers its adapters off as it exits).
    var poweredOffByOthers = false
    /// bluetoothd's unique name when gattd last reached it.
    var bluetoothdOwner: String?
    /// Apps' L2CAP channel servers, through kernel sockets (`+L2CAP`).
    let l2cap: KernelL2CAPChannelServers
    /// The poll thread of the L2CAP sockets, from the first server asked for until close.
    var poller: SocketPoller?
    /// bluetoothd's agent calls waiting for the user's answer (`respondToPairing`).
    var pairingPrompts: [ConnectionID: (call: DBusIncomingCall, event: SecurityManagerEvent)] = [:]

    public init(index: Int, security: SecurityManagerConfiguration = SecurityManagerConfiguration(), bus: DBusConnection.Bus = .system, eventLoop: any EventLoop, logger: Logger) {
        self.security = security
        self.index = index
        self.bus = bus
        self.eventLoop = eventLoop
        self.logger = logger
        self.application = BlueZGattApplication(database: GATTDatabase(deviceName: "gattd", services: []))
        self.devices = BlueZDevices(adapter: index)
        self.l2cap = KernelL2CAPChannelServers(adapterName: "hci\(index)", logger: logger)
    }

    var connection: DBusConnection? {
        switch state {
        case .closed: nil
        case .opening(let c, _), .open(let c): c
        }
    }

    // MARK: - Open and close

    public func open() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            guard case .closed = self.state else { return self.eventLoop.makeSucceededVoidFuture() }
            let c: DBusConnection
            do throws(DBusError) {
                c = try DBusConnection(self.bus, description: "gattd")
            } catch {
                return self.eventLoop.makeFailedFuture(TransportOpenFailure(BlueZError.noBus(error.message).description, retry: .withBackoff))
            }
            let promise = self.eventLoop.makePromise(of: Void.self)
            self.state = .opening(c, promise)
            self.application = BlueZGattApplication(database: self.database)  // gattd's own handles first
            self.listen(on: c)
            return promise.futureResult
        }
    }

    /// Every listener first (bluetoothd going away, devices and the adapter changing), then
    /// the objects (`GetManagedObjects`), the adapter powered, the application registered.
    /// (The handlers hold the transport strongly: the connection, which holds them, is
    /// closed with it.)
    private func listen(on c: DBusConnection) {
        let loop = eventLoop
        c.onDisconnect { e in loop.execute { self.lost("the system bus connection broke (\(e.message))", c) } }
        c.export(prefix: "/org/gattd") { call in loop.execute { self.incoming(call, c) } }
        c.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged") { s in
            guard s.arguments.first?.string == BlueZ.service, s.arguments.count == 3, s.arguments[2].string == "" else { return }
            loop.execute { self.lost("bluetoothd left the system bus", c) }
        }
        c.subscribe(sender: BlueZ.service, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded") { s in
            // A central bluetoothd did not know before: its object comes with Connected already true.
            guard s.arguments.count == 2, let path = s.arguments[0].string,
                let device = s.arguments[1].dictionary?[BlueZDevices.interface]?.dictionary
            else { return }
            loop.execute { self.deviceAdded(path, device, c) }
        }
        c.subscribe(sender: BlueZ.service, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved") { s in
            guard let path = s.arguments.first?.string else { return }
            loop.execute { self.deviceRemoved(path, c) }
        }
        c.subscribe(
            sender: BlueZ.service, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            installed: { error in
                loop.execute {
                    if let error { return self.openFailed("listening to bluetoothd: \(error)", c) }
                    self.checkOwner(c)
                }
            }
        ) { s in loop.execute { self.propertiesChanged(s, c) } }
    }

    /// bluetoothd's unique bus name: a new one is a bluetoothd that restarted (so its adapters'
    /// power-off was its exit, and gattd powers the adapter on again).
    private func checkOwner(_ c: DBusConnection) {
        let call = DBusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner", [.string(BlueZ.service)])
        c.call(call) { result in
            self.eventLoop.execute {
                guard self.isCurrent(c) else { return }
                if let owner = (try? result.get())?.first?.string {
                    if owner != self.bluetoothdOwner { self.poweredOffByOthers = false }
                    self.bluetoothdOwner = owner
                }
                self.loadObjects(c)
            }
        }
    }

    private func loadObjects(_ c: DBusConnection) {
        c.call(BlueZ.managedObjectsCall) { result in
            self.eventLoop.execute {
                guard self.isCurrent(c) else { return }
                do throws(BlueZError) {
                    let objects = try result.mapError { BlueZError.answer("asking bluetoothd for its adapters", $0) }.get().first ?? .array(element: "{oa{sa{sv}}}", [])
                    let adapter = try BlueZAdapter.find(self.index, in: objects)
                    self.adapter = adapter
                    guard adapter.gattManager else { return self.openFailed("bluetoothd serves no GATT applications on hci\(self.index) (no GattManager1)", c, retry: .never(exitCode: 69)) }
                    self.powerOn(adapter, c) { self.register(objects, c) }
                } catch {
                    // bluetoothd gone: its power-off was its exit, not a user's.
                    if error == .notRunning { self.poweredOffByOthers = false }
                    self.openFailed(error.description, c, retry: error == .notRunning ? .withBackoff : .whenAvailable)
                }
            }
        }
    }

    private func powerOn(_ adapter: BlueZAdapter, _ c: DBusConnection, then next: @escaping @Sendable () -> Void) {
        guard !adapter.powered else {
            poweredOffByOthers = false
            return next()
        }
        guard !poweredOffByOthers else {
            return openFailed("hci\(index) is powered off; gattd waits for it to be powered on (bluetoothctl power on)", c)
        }
        logger.info("powering hci\(index) on through bluetoothd")
        let call = DBusCall(
            destination: BlueZ.service, path: BlueZAdapter.path(index), interface: "org.freedesktop.DBus.Properties", member: "Set",
            [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(true))])
        c.call(call) { result in
            self.eventLoop.execute {
                guard self.isCurrent(c) else { return }
                if case .failure(let e) = result { return self.openFailed("bluetoothd could not power hci\(self.index) on: \(e)", c) }
                next()
            }
        }
    }

    /// `RegisterApplication`; once bluetoothd took it, the controller is ready and the
    /// devices already connected come up.
    private func register(_ objects: DBusValue, _ c: DBusConnection) {
        c.call(applicationCall(register: true)) { result in
            self.eventLoop.execute {
                guard self.isCurrent(c), case .opening(_, let promise) = self.state else { return }
                if case .failure(let e) = result {
                    guard self.application.asksForHandles else { return self.openFailed("bluetoothd refused gattd's GATT application: \(e)", c) }
                    self.placeElsewhere(after: e)
                    return self.register(objects, c)
                }
                self.state = .open(c)
                promise.succeed(())
                guard let adapter = self.adapter else { return }
                let probe = adapter.probe
                self.logger.info("GATT application registered with bluetoothd on hci\(self.index) (\(self.application.objects.count) objects)")
                self.emit(.ready(address: adapter.address, description: probe.description, controller: probe.controller))
                for e in self.devices.load(objects) { self.emit(e) }
                self.registerAgent(c)
                self.reconcileL2CAPServers()
            }
        }
    }

    private func isCurrent(_ c: DBusConnection) -> Bool { connection === c }

    /// `GattManager1.RegisterApplication` (`register`) or `UnregisterApplication` of gattd's tree.
    func applicationCall(register: Bool) -> DBusCall {
        DBusCall(
            destination: BlueZ.service, path: BlueZAdapter.path(index), interface: "org.bluez.GattManager1",
            member: register ? "RegisterApplication" : "UnregisterApplication",
            register ? [.objectPath(BlueZGattApplication.root), .properties([:])] : [.objectPath(BlueZGattApplication.root)])
    }

    /// bluetoothd could not put the services where they asked (its own services, or another
    /// application, hold those handles): the next offset, else bluetoothd's own placement.
    func placeElsewhere(after e: DBusError) {
        let offsets = BlueZGattApplication.handleOffsets
        if let i = offsets.firstIndex(of: application.handleOffset), i + 1 < offsets.count {
            let next = offsets[i + 1]
            logger.info("bluetoothd holds handles gattd's services ask for (\(e.message)); asking for them 0x\(String(next, radix: 16)) higher, as on every start beside this bluetoothd")
            application = BlueZGattApplication(database: database, handleOffset: next)
        } else {
            logger.warning("bluetoothd could not place gattd's services at any handles gattd asked for (\(e.message)); it places them itself: centrals that cached the handles discover again, and the moves follow")
            application = application.lettingBluetoothdPlace()
        }
    }

    private func openFailed(_ message: String, _ c: DBusConnection, retry: TransportOpenFailure.Retry = .withBackoff) {
        guard isCurrent(c), case .opening(_, let promise) = state else { return }
        state = .closed
        c.close()
        promise.fail(TransportOpenFailure(message, retry: retry))
        if retry == .whenAvailable {
            // Nothing tells gattd when bluetoothd gains the adapter: look again in a while.
            eventLoop.scheduleTask(in: .seconds(5)) { self.onAvailable?() }
        }
    }

    /// The bus or bluetoothd went away: every connection is gone; the daemon opens again.
    private func lost(_ reason: String, _ c: DBusConnection) {
        guard isCurrent(c) else { return }
        if case .opening = state { return openFailed(reason, c) }
        state = .closed
        dropEverything()
        c.close()
        emit(.lost(reason: reason))
    }

    private func dropEverything() {
        for (_, w) in waiting { connection?.reply(w.call, .failure(BlueZGattError.dbusError(.unlikelyError))) }
        waiting = [:]
        for (_, p) in pairingPrompts { connection?.reply(p.call, .failure(BlueZAgent.rejected)) }
        pairingPrompts = [:]
        advertisements = [:]
        devices.reset()
        l2cap.close()  // the servers asked for stay for the next registration
    }

    public func close() -> EventLoopFuture<Void> {
        eventLoop.submit {
            guard let c = self.connection else { return }
            self.unregisterAll(c)
            self.state = .closed
            self.dropEverything()
            c.close()
            self.poller?.shutdown()
            self.poller = nil
        }
    }

    func emit(_ event: TransportEvent) { onEvent?(event) }

    // MARK: - bluetoothd's signals

    private func propertiesChanged(_ s: DBusSignal, _ c: DBusConnection) {
        guard isCurrent(c), s.arguments.count >= 2, let interface = s.arguments[0].string, let changed = s.arguments[1].dictionary else { return }
        switch interface {
        case BlueZDevices.interface:
            let events = devices.changed(s.path, changed)
            promptsEnded(events)
            for e in events { emit(e) }
            if changed["Paired"]?.bool == true, devices.owns(s.path) { logger.info("\(s.path): paired (bluetoothd keeps the bond)") }
        case "org.bluez.Adapter1" where s.path == BlueZAdapter.path(index):
            if changed["Powered"]?.bool == false, case .open = state {
                poweredOffByOthers = true
                lost("hci\(index) was powered off (by a user, rfkill, or bluetoothd stopping)", c)
            }
        default: break
        }
    }

    private func deviceAdded(_ path: String, _ properties: [String: DBusValue], _ c: DBusConnection) {
        guard isCurrent(c) else { return }
        for e in devices.added(path, properties) { emit(e) }
    }

    private func deviceRemoved(_ path: String, _ c: DBusConnection) {
        guard isCurrent(c) else { return }
        if path == BlueZAdapter.path(index) { return lost("bluetoothd removed hci\(index)", c) }
        let events = devices.removed(path)
        promptsEnded(events)
        for e in events { emit(e) }
    }

    // MARK: - What bluetoothd does itself

    public func refusal(of configuration: GattConfiguration) -> String? { nil }
    public func send(_ pdu: [UInt8], on bearer: BearerID) {}  // never asked: no bearer is reported
    public func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Never] { [] }
    public var supportsEnhancedATT: Bool { false }  // bluetoothd serves EATT itself, as its config says
    public func setEnhancedATT(_ enabled: Bool) {}
    public func flush(now: Duration) -> [Never] { [] }
    public func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Never] { [] }  // bluetoothd asks itself, from the flags
    public func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Never] {
        emit(.linkRequestFinished(id, request.kind, .refused("not through bluetoothd: it has no D-Bus call for a link's parameters")))
        return []
    }
    public func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Never] { [] }
    public func setBonds(_ bonds: [Bond]) {}  // bluetoothd keeps its own bonds' keys
    public func setLocalIRK(_ irk: [UInt8]) {}
    public func configure(_ configuration: GattConfiguration, now: Duration) -> [Never] {
        eventLoop.execute {
            let before = self.security.ioCapability
            self.security = configuration.security
            // A new IO capability is bluetoothd's to know: the agent registers again with it.
            guard before != configuration.security.ioCapability, case .open(let c) = self.state else { return }
            self.reregisterAgent(c)
        }
        return []
    }
    public func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> { BlueZProbe.probe(index, bus: bus, eventLoop: eventLoop, timeout: timeout) }

    public func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Never] {
        eventLoop.execute {
            guard let c = self.connection, let path = self.devices.path(of: id) else { return }
            c.call(DBusCall(destination: BlueZ.service, path: path, interface: BlueZDevices.interface, member: "Disconnect")) { _ in }
        }
        return []
    }

    // MARK: - Capture

    public func setCapture(_ writer: BtsnoopWriter?) { writer?.close() }
    public var captureScope: String { "nothing: bluetoothd runs ATT (btmon records the adapter's traffic)" }
}
