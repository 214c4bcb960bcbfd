import GattCore
import GattTransport
import Logging
import NIOCore

/// The daemon: one event loop around the sans-I/O `PeripheralStack` (the `Peripheral` core
/// on the half below the seam of whichever `PeripheralTransport` the command line picked, which
/// made the stack: `PeripheralStackDriving`), with one timer and one clock for both halves. It hands the stack the
/// transport's events, the time and the control socket's calls, and turns the core's
/// events into log lines, control events, persisted values and systemd notifications. It
/// opens the transport again with backoff when the controller goes away, and stops in order.
///
/// All mutable state is confined to `eventLoop`.
public final class PeripheralDaemon: PeripheralControl, @unchecked Sendable {
    public let eventLoop: any EventLoop
    public let logger: Logger
    let transport: any PeripheralTransport
    let options: DaemonOptions
    /// What the services drive: the core in the stack, the clock, the log, the control events.
    let context: DaemonContext
    /// Bonds and bonded centrals' GATT state, and their files (`<state-dir>/bonds`).
    let bonds: BondService
    /// Pairing events, and the prompts waiting for a control client's answer.
    let pairing: PairingService
    /// What programs change of the advertising sets, and how their state is said.
    let advertising: AdvertisingService
    /// Persisted values: made durable before they are acknowledged.
    let persistence: PersistenceService
    /// The controller as last known, its state, and whether the config's sets fit it.
    let controller: ControllerService
    /// The `capture` op's recorder.
    let packetCapture: CaptureService
    /// Link requests waiting for each central's answer.
    let linkRequests: LinkRequestService
    /// App L2CAP channels: the config's and published ones, their PSMs, listeners and sockets.
    let l2capChannels: L2CAPChannelService
    /// The services served: the config's, and those programs added (where their handles are).
    var services: ServiceCatalog
    /// What programs changed at run time, kept for a restart (`<state-dir>/restore.json`).
    var restoration: RestorationCoordinator

    /// The config as loaded (without run-time advertising data).
    var configuration: GattConfiguration
    /// The config's settings for the daemon itself (restoration, bonds).
    var settings: DaemonSettings
    /// The core on the transport: the event queue, the flushes, the security routing.
    let stack: any PeripheralStackDriving
    var core: Peripheral {
        get { stack.core }
        _modify { yield &stack.core }
    }
    /// Called (on the loop) when the daemon cannot go on: the first controller cannot advertise
    /// the config's sets. The runner prints the message and exits with the status.
    public var onFatalError: ((DaemonRunner.Failure) -> Void)?
    /// The stack's one timer (`tick` at its next deadline).
    private lazy var timer = DeadlineTimer(eventLoop: eventLoop, origin: context.origin) { [unowned self] in stack.tick(now: now) }
    private var watchdog: RepeatedTask?
    private(set) var backoff = Backoff()
    /// Starting, serving (with the transport's state), stopping or stopped.
    private(set) var lifecycle = DaemonLifecycle.created
    /// When clean file pages go back to the kernel (`StartupPages`).
    lazy var cleanPages = CleanPageRelease(eventLoop: eventLoop, logger: logger)
    /// `PeripheralControl`: where control events go (set by `ControlServer`).
    public var controlEventHandler: ((ControlEvent) -> Void)? {
        get { context.controlEventHandler }
        set { context.controlEventHandler = newValue }
    }
    /// Said once that the transport cannot accept Enhanced ATT (`applyEnhancedATT`).
    var loggedNoEnhancedATT = false

    public init(
        configuration: GattConfiguration, settings: DaemonSettings = DaemonSettings(), payloads: AdvertisingPayloads, transport: any PeripheralTransport,
        logger: Logger, options: DaemonOptions = DaemonOptions()
    ) {
        var configuration = configuration
        var l2capChannels = L2CAPChannelCoordinator(
            stateDirectory: options.stateDirectory, restoresPublished: options.restoresState && settings.stateRestoration, logger: logger)
        l2capChannels.adopt(&configuration)
        self.configuration = configuration
        self.settings = settings
        self.transport = transport
        self.eventLoop = transport.eventLoop
        self.logger = logger
        self.logsPDUs = logger.logLevel <= .debug
        self.options = options
        let persisted = options.persistedValues(logger: logger)
        var restoration = RestorationCoordinator(
            stateDirectory: options.stateDirectory, enabled: options.restoresState && settings.stateRestoration, logger: logger)
        let saved = restoration.load()
        let (services, kept) = ServiceCatalog.restoring(configuration, saved, l2capChannels: l2capChannels.channels, expander: options.serviceExpander, logger: logger)
        self.services = services
        var database = services.database(configuration)
        if let n = persisted?.apply(to: &database), n > 0 { PeripheralEventLog(logger: logger).restored(persistedValues: n) }
        var att = options.attServerConfiguration
        att.minimumKeySize = configuration.security.minimumKeySize
        var core = Peripheral(
            database: database, payloads: payloads, otherSets: AdvertisingService.otherSets(configuration), maxConnections: configuration.advertising.maxConnections, att: att)
        core.securityOnConnect = configuration.security.securityOnConnect
        core.setEnhancedATT(Self.servesEnhancedATT(configuration, transport))
        // The transport's value runs in the stack (the H4 host, the kernel's rules), its shell
        // wired to it: the shell feeds it what it reads and performs what it makes.
        let origin = ContinuousClock.now
        self.stack = transport.makeStack(core: core, configuration: configuration) { [origin] in ContinuousClock.now - origin }
        self.context = DaemonContext(stack: stack, logger: logger, origin: origin)
        self.bonds = BondService(context: context, stateDirectory: options.stateDirectory, transport: transport)
        self.pairing = PairingService(context: context)
        self.advertising = AdvertisingService(context: context)
        self.persistence = PersistenceService(context: context, values: persisted, eventLoop: eventLoop)
        self.linkRequests = LinkRequestService(context: context, eventLoop: eventLoop)
        self.controller = ControllerService(context: context, configName: options.configName)
        self.packetCapture = CaptureService(transport: transport, logger: logger)
        self.l2capChannels = L2CAPChannelService(context: context, coordinator: l2capChannels, transport: transport)
        self.restoration = restoration
        // The daemon owns the stack, and these run on every turn (every packet from an H4
        // controller): no retain of the daemon, whose weak references make each one slow.
        let daemon = Unmanaged.passUnretained(self)
        stack.onEvent = { e in daemon._withUnsafeGuaranteedRef { $0.emit(e) } }
        stack.admits = { e in daemon._withUnsafeGuaranteedRef { $0.admits(e) } }
        stack.onTurnEnd = { daemon._withUnsafeGuaranteedRef { $0.turnEnded() } }
        if logsPDUs {
            stack.onATTPDU = { [unowned self] id, pdu, sent in eventLog.attPDU(pdu, sent: sent, central: centralName(id.connection)) }
        }
        restoreAdvertising(kept)
    }


    var now: Duration { context.now }
    var eventLog: PeripheralEventLog { PeripheralEventLog(logger: logger) }
    /// Debug level is on: ATT PDUs are logged (asked once; the level is set at bootstrap).
    private let logsPDUs: Bool

    // MARK: - Lifecycle

    /// Opens the transport and serves until `stop()`. The future fails only for what waiting
    /// cannot fix (a `TransportOpenFailure` with `.never`); a controller that cannot be
    /// reached yet is retried.
    public func start() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            guard case .created = self.lifecycle else { return self.eventLoop.makeSucceededVoidFuture() }
            self.transport.onEvent = { [weak self] event in
                guard let self else { return }
                self.stack.handle(event, now: self.now)
            }
            self.transport.onAvailable = { [weak self] in self?.openTransport() }
            self.bonds.load()
            self.watchdog = self.options.notifier.scheduleWatchdog(on: self.eventLoop)
            if self.watchdog != nil, let every = self.options.notifier.watchdogPingInterval {
                self.logger.debug("systemd watchdog: pinging every \(TimeAmount(every).logDescription)")
            }
            self.lifecycle = .starting(.opening)
            self.applyEnhancedATT()
            self.transport.serveDatabase(self.core.database)
            return self.transport.open().flatMapError { error in
                if let f = error as? TransportOpenFailure, case .never = f.retry {
                    self.controller.setState(for: f)
                    return self.eventLoop.makeFailedFuture(f)
                }
                self.openFailed(error)
                return self.eventLoop.makeSucceededVoidFuture()
            }.map {
                self.opened()
                self.notifyReady()
            }
        }
    }

    /// READY=1 once config, control socket and persistence are up and the controller has
    /// been tried, whether it answered or not: systemd must not time out (and restart gattd
    /// in a loop) while a dongle or UART is missing. STATUS= says what gattd waits for.
    private func notifyReady() {
        guard case .starting(let link) = lifecycle else { return }
        lifecycle = .serving(link)
        try? options.notifier.ready(status: core.isAdvertising ? statusLine() : options.waitingStatus)
    }

    /// Opens the transport again (after the backoff delay, or when it says the controller
    /// appeared: the kernel's adapter came back after it closed); not while it is opening,
    /// nor once stopping.
    private func openTransport() {
        switch lifecycle.link {
        case .retrying(let task)?: task.cancel()
        case .awaitingController?, .open?: break
        case .opening?, nil: return
        }
        lifecycle.setLink(.opening)
        transport.open().whenComplete { result in
            switch result {
            case .success: self.opened()
            case .failure(let error): self.openFailed(error)
            }
        }
    }

    /// `open()` succeeded (a controller lost meanwhile has already scheduled its retry).
    private func opened() {
        guard case .opening? = lifecycle.link else { return }
        lifecycle.setLink(.open)
        backoff.reset()
    }

    private func openFailed(_ error: any Error) {
        guard lifecycle.link != nil else { return }
        let f = error as? TransportOpenFailure ?? TransportOpenFailure("\(error)", retry: .withBackoff)
        controller.setState(for: f)
        if f.retry == .whenAvailable {
            lifecycle.setLink(.awaitingController)
            logger.warning("\(f.message)")
        } else {
            retry(after: f.message)
        }
    }

    /// Opens the transport again after the backoff delay. A controller that is away for
    /// hours must not fill the journal: the first failure is a warning, repeats are debug lines.
    private func retry(after message: String) {
        guard let link = lifecycle.link else { return }
        let (delay, first) = backoff.next()
        let line: Logger.Message = "\(message); retrying in \(delay.logDescription)"
        if first { logger.warning(line) } else { logger.debug(line) }
        link.retry?.cancel()
        lifecycle.setLink(.retrying(eventLoop.scheduleTask(in: delay) { self.openTransport() }))
    }

    /// Stops advertising, disconnects centrals politely and closes the transport. The
    /// future completes when done (at most ~2 s).
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            switch self.lifecycle {
            case .stopping(let p), .stopped(let p): return p.futureResult
            case .created, .starting, .serving: break
            }
            self.lifecycle.link?.retry?.cancel()
            let p = self.eventLoop.makePromise(of: Void.self)
            self.lifecycle = .stopping(p)
            try? self.options.notifier.stopping()
            guard self.core.address != nil else {
                self.finishStop()
                return p.futureResult
            }
            self.eventLog.stopping(centrals: self.core.connections.count)
            self.process(self.core.shutdown())
            self.eventLoop.scheduleTask(in: .seconds(2)) { self.finishStop() }
            return p.futureResult
        }
    }

    private func finishStop() {
        guard case .stopping(let p) = lifecycle else { return }
        lifecycle = .stopped(p)
        timer.cancel()
        watchdog?.cancel()
        persistence.values?.flush()
        transport.close().whenComplete { _ in p.succeed() }
    }

    // MARK: - Core

    /// Whether the core hears a transport event (`PeripheralStack.admits`): a first controller
    /// whose advertising sets do not fit is withheld (the daemon exits).
    private func admits(_ event: TransportEvent) -> Bool {
        guard case .ready(_, let description, let c) = event else { return true }
        if let c, !controller.setsFit(c, description: description, fatal: onFatalError) { return false }
        // The adapter is up: whether the transport could listen for Enhanced ATT is known now
        // (Server Supported Features must not promise what it refuses).
        core.setEnhancedATT(Self.servesEnhancedATT(configuration, transport))
        return true
    }

    /// Performs the core's outputs in a turn of the stack (or in the running one, which
    /// then feeds the core the transport events they raise, flushes once and ends here).
    func process(_ outputs: [PeripheralOutput]) { stack.perform(outputs, now: now) }

    /// A turn is over (everything drained and flushed): persists client state, re-arms the
    /// timer, and stops once all is quiet while stopping.
    private func turnEnded() {
        bonds.sync()
        armTimer()
        if case .stopping = lifecycle, core.isIdle { finishStop() }
    }

    /// Schedules the stack's next `tick`.
    private func armTimer() {
        if case .stopped = lifecycle { return timer.cancel() }
        timer.arm(at: stack.nextDeadline)
    }

    // MARK: - Events: log lines, control clients, persistence, systemd

    private func emit(_ event: PeripheralEvent) {
        switch event {
        case .controllerReady(let address, let description, let info):
            controller.ready(address: address, description: description, controller: info)
        case .controllerLost(let reason):
            if lifecycle.isShuttingDown { finishStop() } else { controller.setState(.resetting, reason: reason); retry(after: reason) }
            if lifecycle.isServing { try? options.notifier.status(options.waitingStatus) }
        case .advertisingChanged(let on, let set):
            advertising.changed(on, set: set)
            if on, set == AdvertisingSet.primaryID {
                cleanPages.advertisingStarted()
                if lifecycle.isServing { try? options.notifier.status(statusLine()) }
            }
        case .advertisingRefused(let whileConnected, let reason, let set):
            advertising.refused(set, reason: reason, whileConnected: whileConnected)
        case .connected(let c):
            eventLog.connected(c.address, type: "\(c.addressType)", handle: c.handle)
            let bond = bonds.resolving(c.address)
            if let bond { logger.info("\(c.address) is the bonded central \(bond.address) (its IRK resolves the address)") }
            bonds.restoreSigningKey(c)
            try? options.notifier.status(statusLine())
            controlEventHandler?(.connected(central: c.address.description, identity: bond?.address.description))
            bonds.recognise(c, resolvedIsEnough: settings.restoreWithoutEncryption)
        case .disconnected(let c, let reason, let detail):
            linkRequests.ended(c.id, .disconnected)
            pairing.closed(c.id)
            bonds.disconnected(c.id)
            eventLog.disconnected(c.address, reason: detail ?? "\(reason)")
            try? options.notifier.status(statusLine())
            controlEventHandler?(.disconnected(central: c.address.description, reason: reason.controlName))
            if core.connections.isEmpty { cleanPages.schedule { [unowned self] in core.connections.isEmpty } }
        case .securityChanged(let c):
            logger.info("\(c.address): security \(c.security)")
            bonds.securityChanged(c, resolvedIsEnough: settings.restoreWithoutEncryption)
        case .linkChanged(let c):
            logger.info("\(c.address): link \(c.link)")
            controlEventHandler?(.link(central: c.address.description, c.link))
        case .linkRequestFinished(let c, let kind, let result):
            linkRequests.ended(c.id, .finished(result), kind: kind)
        case .pairing(let c, let e):
            if let bond = pairing.observe(e, on: c) { bonds.paired(bond, on: c, maxBonds: settings.maxBonds) }
            pairing.announce(e, on: c)
        case .l2capChannel(let channel, let central):
            l2capChannels.opened(channel, central: central)
        case .att(let e, let central):
            let db = core.database
            eventLog.att(e, database: db) { _ in central?.description }
            if case .written(let id, let c, let v) = e {
                persistence.written(db, characteristic: c, value: v)  // Write Commands, Signed Writes
                bonds.written(by: id)
            }
            if case .deferredAccess(let request, let id, .commit(let values, let clientState)) = e {
                answerCommit(request, id, values: values, clientState: clientState, central: central?.description)
            }
            if let handler = controlEventHandler, let ce = ControlEvent.from(e, database: db, central: { _ in central?.description }) {
                handler(ce)
            }
        case .reloaded(let outcome):
            eventLog.reloaded(outcome)
        case .warning(let m):
            logger.warning("\(m)")
        }
    }

    /// A connection's central address, for log lines (its number if it is gone).
    private func centralName(_ id: ConnectionID) -> String { core.connections[id]?.address.description ?? id.description }

    /// The systemd STATUS= text.
    func statusLine() -> String {
        let n = core.connections.count
        return "\"\(advertisedName)\": \(n) central\(n == 1 ? "" : "s") connected"
    }

    var advertisedName: String { configuration.advertising.localName ?? configuration.name }
}
