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
/// An I/O shell: its rules are sans-I/O values, and this class moves their messages: its life
/// and its opening (`BlueZLifecycle`, with the adapter's power: `BlueZAdapterPower`), the application and how
/// calls on it route (`BlueZGattApplication`), the accesses waiting for the core
/// (`BlueZGATTAccesses`), the advertisements (`BlueZAdvertisements`), devices as connections
/// (`BlueZDevices`), the agent's prompts (`BlueZPairingPrompts`). Its state is confined to
/// `eventLoop`; bus callbacks hop onto it.
public final class BlueZPeripheralTransport: SelfDrivenTransport, PacketCapturing, @unchecked Sendable {
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    let index: Int
    let bus: DBusConnection.Bus
    let logger: Logger

    typealias Life = BlueZLifecycle<DBusConnection, EventLoopPromise<Void>>
    var life: Life
    var application: BlueZGattApplication
    /// The database `application` is built from (`serveDatabase`).
    var database = GATTDatabase(deviceName: "gattd", services: [])
    var devices: BlueZDevices
    var accesses = BlueZGATTAccesses<DBusIncomingCall>()
    var advertisements = BlueZAdvertisements()
    /// The config's `security`: the agent's IO capability, whether Just Works asks the user.
    var security: SecurityManagerConfiguration
    /// Apps' L2CAP channel servers, through kernel sockets (`+L2CAP`).
    let channels: BlueZL2CAPChannels
    var prompts = BlueZPairingPrompts<DBusIncomingCall>()

    public init(index: Int, security: SecurityManagerConfiguration = SecurityManagerConfiguration(), bus: DBusConnection.Bus = .system, eventLoop: any EventLoop, logger: Logger) {
        self.security = security
        self.index = index
        self.bus = bus
        self.eventLoop = eventLoop
        self.logger = logger
        self.application = BlueZGattApplication(database: GATTDatabase(deviceName: "gattd", services: []))
        self.devices = BlueZDevices(adapter: index)
        self.life = Life(adapter: index)
        self.channels = BlueZL2CAPChannels(adapter: index, logger: logger)
    }

    var connection: DBusConnection? { life.connection }

    // MARK: - Open and close

    public func open() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            guard case .closed = self.life.state else { return self.eventLoop.makeSucceededVoidFuture() }
            let c: DBusConnection
            do throws(DBusError) {
                c = try DBusConnection(self.bus, description: "gattd")
            } catch {
                return self.eventLoop.makeFailedFuture(TransportOpenFailure(BlueZError.noBus(error.message).description, retry: .withBackoff))
            }
            let promise = self.eventLoop.makePromise(of: Void.self)
            _ = self.life.open(c, promise)
            self.application = BlueZGattApplication(database: self.database)  // gattd's own handles first
            self.listen(on: c)
            return promise.futureResult
        }
    }

    /// Every listener first (bluetoothd going away, devices and the adapter changing:
    /// `BlueZSignal`), then the open's calls (`proceed`).
    /// (The handlers hold the transport strongly: the connection, which holds them, is
    /// closed with it.)
    private func listen(on c: DBusConnection) {
        let (loop, adapter) = (eventLoop, index)
        c.onDisconnect { e in loop.execute { self.lost("the system bus connection broke (\(e.message))", c) } }
        c.export(prefix: "/org/gattd") { call in loop.execute { self.incoming(call, c) } }
        // The last installed, the open goes on.
        let listening: @Sendable (DBusError?) -> Void = { error in
            loop.execute {
                if let error { return self.openFailed("listening to bluetoothd: \(error)", c) }
                self.proceed(self.life.listening(c), c)
            }
        }
        for (i, m) in BlueZSignal.subscriptions.enumerated() {
            let installed = i == BlueZSignal.subscriptions.count - 1 ? listening : nil
            c.subscribe(sender: m.sender, interface: m.interface, member: m.member, installed: installed) { s in
                guard let signal = BlueZSignal(s, adapter: adapter) else { return }
                loop.execute { self.signal(signal, c) }
            }
        }
    }

    /// Makes the open's next call (`life` says which), its answer going back to `life`; once
    /// bluetoothd took the application, the controller is ready and the devices already
    /// connected come up.
    private func proceed(_ next: Life.Next?, _ c: DBusConnection) {
        switch next {
        case nil:
            return
        case .call(let call, let note):
            switch note {
            case .poweringOn?: logger.info("powering hci\(index) on through bluetoothd")
            case .handlesTaken(let e)? where application.asksForHandles:
                logger.info("bluetoothd holds handles gattd's services ask for (\(e.message)); asking for them 0x\(String(application.handleOffset, radix: 16)) higher, as on every start beside this bluetoothd")
            case .handlesTaken(let e)?:
                logger.warning("bluetoothd could not place gattd's services at any handles gattd asked for (\(e.message)); it places them itself: centrals that cached the handles discover again, and the moves follow")
            case nil: break
            }
            c.call(call) { result in
                self.eventLoop.execute { self.proceed(self.life.answered(c, result, application: &self.application, database: self.database), c) }
            }
        case .fail(let message, let retry):
            openFailed(message, c, retry: retry)
        case .opened(let promise, let adapter, let objects):
            promise.succeed(())
            let probe = adapter.probe
            logger.info("GATT application registered with bluetoothd on hci\(index) (\(application.objects.count) objects)")
            emit(.ready(address: adapter.address, description: probe.description, controller: probe.controller))
            for e in devices.load(objects) { emit(e) }
            registerAgent(c)
            reconcileL2CAPServers()
        }
    }

    private func openFailed(_ message: String, _ c: DBusConnection, retry: TransportOpenFailure.Retry = .withBackoff) {
        guard let promise = life.openFailed(c) else { return }
        c.close()
        promise.fail(TransportOpenFailure(message, retry: retry))
        if retry == .whenAvailable {
            // Nothing tells gattd when bluetoothd gains the adapter: look again in a while.
            eventLoop.scheduleTask(in: .seconds(5)) { self.onAvailable?() }
        }
    }

    /// The bus or bluetoothd went away: every connection is gone; the daemon opens again.
    private func lost(_ reason: String, _ c: DBusConnection) {
        switch life.lost(c) {
        case nil: return
        case .openFailed: return openFailed(reason, c)
        case .lost: dropEverything(c)
        }
        c.close()
        emit(.lost(reason: reason))
    }

    /// Everything served on `c` is gone: calls waiting are answered.
    private func dropEverything(_ c: DBusConnection) {
        for (call, error) in accesses.dropAll() { c.reply(call, .failure(error)) }
        for call in prompts.dropAll() { c.reply(call, .failure(BlueZAgent.rejected)) }
        advertisements.reset()
        devices.reset()
        channels.servers.close()  // the servers asked for stay for the next registration
    }

    public func close() -> EventLoopFuture<Void> {
        eventLoop.submit {
            guard let c = self.connection else { return }
            self.unregisterAll(c)
            _ = self.life.close()
            self.dropEverything(c)
            c.close()
            self.channels.shutdown()
        }
    }

    func emit(_ event: TransportEvent) { onEvent?(event) }

    /// Makes `call` on `c` and logs how it ended: `done`, or a warning `failed` words.
    func call(_ call: DBusCall, on c: DBusConnection, done: String, failed: @escaping @Sendable (DBusError) -> String) {
        c.call(call) { result in
            switch result {
            case .success: self.logger.info("\(done)")
            case .failure(let e): self.logger.warning("\(failed(e))")
            }
        }
    }

    private func signal(_ signal: BlueZSignal, _ c: DBusConnection) {
        guard life.isCurrent(c) else { return }
        switch signal {
        case .bluetoothdLeft: lost("bluetoothd left the system bus", c)
        case .adapterRemoved: lost("bluetoothd removed hci\(index)", c)
        case .adapterPoweredOff:
            if life.poweredOff(c) { lost("hci\(index) was powered off (by a user, rfkill, or bluetoothd stopping)", c) }
        case .deviceAdded(let path, let properties):
            for e in devices.added(path, properties) { emit(e) }
        case .deviceChanged(let path, let changed):
            devicesChanged(devices.changed(path, changed), c)
            if changed["Paired"]?.bool == true, devices.owns(path) { logger.info("\(path): paired (bluetoothd keeps the bond)") }
        case .deviceRemoved(let path):
            devicesChanged(devices.removed(path), c)
        }
    }

    /// Devices' connections came or went: a central's unanswered prompt goes with it.
    private func devicesChanged(_ events: [TransportEvent], _ c: DBusConnection) {
        for call in prompts.ended(events) { c.reply(call, .failure(BlueZAgent.rejected)) }
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
            guard before != configuration.security.ioCapability, let (c, _) = self.life.served else { return }
            self.reregisterAgent(c)
        }
        return []
    }
    public func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> { BlueZProbe.probe(index, bus: bus, eventLoop: eventLoop, timeout: timeout) }

    public func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Never] {
        eventLoop.execute {
            guard let c = self.connection, let path = self.devices.path(of: id) else { return }
            c.call(BlueZAdapter.disconnectCall(path)) { _ in }
        }
        return []
    }

    // MARK: - Capture

    public func setCapture(_ writer: BtsnoopWriter?) { writer?.close() }
    public var captureScope: String { "nothing: bluetoothd runs ATT (btmon records the adapter's traffic)" }
}
