import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix

/// The I/O shell for the Linux kernel's Bluetooth stack (`--transport hciN`, `kernel:hciN`):
/// the kernel runs the controller, the LE links, L2CAP and SMP; gattd advertises with raw HCI
/// commands and serves GattCore's `ATTServer` on the kernel's L2CAP ATT channel, one
/// ``KernelATTBearer`` (one socket) per connected central.
///
/// One event loop owns all mutable state (the ATT server, the links, the adapter state).
/// HCI commands block until their Command Complete, so they run on `commandThread`, one at
/// a time, and their results hop back to the loop. Socket input arrives through
/// ``KernelPoller`` (one poll thread) and is handed to the loop.
///
/// Lifecycle: ``start()`` refuses to run beside bluetoothd and without the capabilities,
/// brings the adapter up, advertises, listens. When the adapter goes down or away its
/// centrals are dropped and the daemon waits for it to come back (adapter monitor events),
/// then opens it, advertises and listens again, without a restart.
public final class KernelPeripheralDaemon: @unchecked Sendable {
    public typealias Options = DaemonOptions

    public let eventLoop: any EventLoop
    public let logger: Logger
    /// N of hciN.
    public let index: Int
    var adapterName: String { "hci\(index)" }
    let options: Options
    let persisted: PersistedValues?
    private let origin = ContinuousClock.now
    /// Runs the blocking HCI commands (and the adapter bring-up), one at a time.
    private let commandThread = NIOThreadPool(numberOfThreads: 1)

    var configuration: GattConfiguration
    var payloads: AdvertisingPayloads
    var server: ATTServer
    /// The connected centrals' ATT bearers.
    var links: [ConnectionID: KernelLink] = [:]
    /// Connection handles of LE links in the peripheral role (adapter monitor, accepted bearers).
    private var peripheralHandles: Set<UInt16> = []
    /// Disconnection Complete reasons not yet logged, by connection handle.
    private var disconnectReasons: [UInt16: UInt8] = [:]
    /// ConnectionIDs for links whose handle is unknown or still in use start here.
    private var spareConnectionID: UInt16 = 0x1000

    private var poller: KernelPoller?
    private var monitor: KernelAdapterMonitor?
    /// Accepts the kernel's Just Works confirmations (bluetoothd's agent is not running).
    private var agent: KernelPairingAgent?
    private(set) var controller: KernelHCIController?
    private var listener: KernelATTListener?
    /// The address last read from the controller (kept for `status` while the adapter is gone).
    private(set) var address: BluetoothAddress = .zero
    private(set) var adapterState: AdapterState = .closed
    /// Bumped whenever an adapter open in flight must be forgotten (the adapter went down meanwhile).
    private var generation = 0
    private var retryTask: Scheduled<Void>?
    private var backoff: TimeAmount = .milliseconds(500)
    private var startPromise: EventLoopPromise<Void>?

    /// Whether the `advertise` control op wants advertising.
    var advertisingWanted = true
    /// Whether the controller advertises, as far as the daemon knows.
    private(set) var isAdvertising = false
    /// Advertising commands are running on the command thread.
    private var advertisingBusy = false
    /// Advertising must be reconfigured (new payloads) even if it is on.
    private var advertisingStale = true
    private var advertisingRefusalLogged = false
    var controlAttached = false
    var readyNotified = false
    var timer: Scheduled<Void>?
    var watchdog: RepeatedTask?
    var shutdown = DaemonShutdown()
    /// `PeripheralControl`: where control events go (set by `ControlServer`).
    public var controlEventHandler: ((ControlEvent) -> Void)?

    enum AdapterState: Equatable {
        /// Gone or down: waiting for it (or for the retry timer).
        case closed
        /// Being brought up on the command thread.
        case opening
        /// Controller open, listening on the ATT channel.
        case ready
    }

    public init(
        configuration: GattConfiguration, payloads: AdvertisingPayloads, index: Int, group: any EventLoopGroup, logger: Logger,
        options: Options = Options()
    ) {
        self.configuration = configuration
        self.payloads = payloads
        self.index = index
        self.eventLoop = group.next()
        self.logger = logger
        self.options = options
        self.persisted = options.persistedValues(logger: logger)
        let database = DaemonOptions.initialDatabase(configuration, persisted: persisted, logger: logger)
        self.server = ATTServer(database: database, configuration: options.attServerConfiguration)
        commandThread.start()
    }

    var now: Duration { ContinuousClock.now - origin }
    var maxConnections: Int { configuration.advertising.maxConnections ?? Int.max }

    // MARK: - Lifecycle

    /// Opens the adapter and serves until ``stop()``. The future fails (and the daemon stops)
    /// for what waiting cannot fix: bluetoothd running, missing capabilities, a kernel without
    /// Bluetooth sockets. It succeeds once serving, or once waiting for an adapter that is
    /// missing or failing (the daemon keeps trying).
    public func start() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            let promise = self.eventLoop.makePromise(of: Void.self)
            if let warning = BluetoothdDetector.warning(adapter: self.adapterName) {
                promise.fail(KernelTransportError(.bluetoothdRunning, warning))
                return promise.futureResult
            }
            do {
                let poller = try KernelPoller()
                let monitor: KernelAdapterMonitor
                do {
                    monitor = try KernelAdapterMonitor(index: self.index, poller: poller)
                } catch {
                    poller.shutdown()
                    throw error
                }
                self.poller = poller
                self.monitor = monitor
                monitor.start(on: self.eventLoop) { [weak self] event in self?.adapterEvent(event) }
                do {
                    let agent = try KernelPairingAgent(index: self.index, poller: poller)
                    self.agent = agent
                    agent.start(on: self.eventLoop) { [weak self] confirmation in self?.pairingConfirmed(confirmation) }
                } catch {
                    self.logger.warning("no pairing agent (centrals cannot pair on kernels that ask user space to confirm Just Works): \(error)")
                }
            } catch {
                promise.fail(error)
                return promise.futureResult
            }
            self.startPromise = promise
            self.watchdog = self.options.notifier.scheduleWatchdog(on: self.eventLoop)
            self.openAdapter()
            return promise.futureResult
        }
    }

    /// Stops advertising, disconnects the centrals (Remote User Terminated), waits up to 2 s
    /// for their links to go, then closes every socket. Completes when done.
    public func stop() -> EventLoopFuture<Void> {
        stopOnce {
            self.retryTask?.cancel()
            self.listener?.close()
            self.listener = nil
            guard let controller = self.controller, self.adapterState == .ready else {
                self.finishStop()
                return
            }
            let handles = Set(self.links.values.compactMap(\.handle)).union(self.peripheralHandles).sorted()
            self.eventLog.stopping(centrals: self.links.count)
            self.commandThread.runIfActive(eventLoop: self.eventLoop) {
                _ = try? controller.send(AdvertisingPayloads.disableCommand)
                for handle in handles {
                    _ = try? controller.send(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
                }
            }.whenComplete { _ in
                self.isAdvertising = false
                self.finishStopWhenDisconnected(deadline: self.now + .seconds(2))
            }
        }
    }

    private func finishStopWhenDisconnected(deadline: Duration) {
        if links.isEmpty || now >= deadline {
            finishStop()
        } else {
            eventLoop.scheduleTask(in: .milliseconds(50)) { self.finishStopWhenDisconnected(deadline: deadline) }
        }
    }

    private func finishStop() {
        guard let p = finishingStop() else { return }
        for (id, link) in links.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            link.bearer.close()
            links[id] = nil
            _ = server.disconnect(id)
        }
        listener?.close()
        listener = nil
        monitor?.close()
        monitor = nil
        agent?.close()
        agent = nil
        let poller = self.poller
        self.poller = nil
        let controller = self.controller
        self.controller = nil
        adapterState = .closed
        commandThread.runIfActive(eventLoop: eventLoop) {
            controller?.close()
            poller?.shutdown()
        }.whenComplete { _ in
            self.commandThread.shutdownGracefully { _ in }
            p.succeed()
        }
    }

    // MARK: - Adapter

    /// Brings the adapter up and reads it on the command thread, then listens and advertises.
    private func openAdapter() {
        guard !stopping, adapterState == .closed else { return }
        retryTask?.cancel()
        retryTask = nil
        adapterState = .opening
        generation += 1
        let generation = self.generation
        let index = self.index
        commandThread.runIfActive(eventLoop: eventLoop) { () throws -> (KernelHCIController, KernelAdapterInfo) in
            let controller = try KernelHCIController(index: index)
            do {
                return (controller, try controller.info())
            } catch {
                controller.close()
                throw error
            }
        }.whenComplete { result in
            self.adapterOpened(result, generation: generation)
        }
    }

    private func adapterOpened(_ result: Result<(KernelHCIController, KernelAdapterInfo), any Error>, generation: Int) {
        guard generation == self.generation, !stopping else {
            if case .success(let (controller, _)) = result { commandThread.submit { _ in controller.close() } }
            return
        }
        let opened: (KernelHCIController, KernelAdapterInfo)
        switch result {
        case .success(let value):
            opened = value
        case .failure(let error):
            adapterState = .closed
            adapterFailed(error)
            return
        }
        let (controller, info) = opened
        guard let poller else { return }
        let listener: KernelATTListener
        do {
            listener = try KernelATTListener(
                address: KernelBDAddress(controller.address.address, type: .lePublic), adapter: adapterName, poller: poller)
        } catch {
            commandThread.submit { _ in controller.close() }
            adapterState = .closed
            adapterFailed(error)
            return
        }
        self.controller = controller
        self.listener = listener
        self.address = controller.address.address
        adapterState = .ready
        backoff = .milliseconds(500)
        logger.info(
            "controller \(controller.address.address) (\(adapterName), kernel): LE features 0x\(String(controller.leFeatures, radix: 16)), ACL \(info.aclMTU) bytes x \(info.aclPackets)"
        )
        listener.start(on: eventLoop) { [weak self] bearer in self?.accepted(bearer) }
        advertisingStale = true
        isAdvertising = false
        updateAdvertising()
        startPromise?.succeed()
        startPromise = nil
    }

    /// An adapter open failed: fatal at start for what waiting cannot fix; otherwise wait
    /// for the adapter (monitor events) and retry with backoff.
    private func adapterFailed(_ error: any Error) {
        let kind = (error as? KernelTransportError)?.kind
        switch kind {
        case .permissionDenied?, .bluetoothdRunning?:
            if let p = startPromise {
                startPromise = nil
                p.fail(error)
                return
            }
            logger.error("cannot open \(adapterName): \(error); retrying in \(backoff.logDescription)")
        case .noSuchAdapter?:
            logger.warning("\(error); waiting for \(adapterName) to appear")
            startPromise?.succeed()
            startPromise = nil
            return  // `.registered` opens it
        default:
            logger.warning("cannot open \(adapterName): \(error); retrying in \(backoff.logDescription)")
            startPromise?.succeed()
            startPromise = nil
        }
        retryTask = eventLoop.scheduleTask(in: backoff) { self.openAdapter() }
        backoff = min(backoff * 2, .seconds(10))
    }

    /// The adapter went down or away: drop its centrals and sockets, wait for it.
    private func adapterLost(_ why: String) {
        generation += 1
        retryTask?.cancel()
        retryTask = nil
        guard adapterState != .closed else { return }
        let wasReady = adapterState == .ready
        adapterState = .closed
        if wasReady {
            logger.warning("\(adapterName) \(why): dropping \(links.count) central(s); waiting for it to come back")
        }
        listener?.close()
        listener = nil
        for id in links.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let link = links.removeValue(forKey: id) else { continue }
            link.bearer.close()
            process(server.disconnect(id))
            connectionEnded(link, reason: wasReady ? HCIStatus(0x16) : nil, why: "adapter \(why)")
        }
        peripheralHandles.removeAll()
        disconnectReasons.removeAll()
        if isAdvertising { advertisingChanged(false) }
        isAdvertising = false
        advertisingBusy = false
        if let controller {
            commandThread.submit { _ in controller.close() }
        }
        controller = nil
    }

    private func adapterEvent(_ event: KernelAdapterEvent) {
        guard !stopping else { return }
        switch event {
        case .registered, .up:
            logger.debug("\(adapterName): \(event)")
            if adapterState == .closed { openAdapter() }
        case .down:
            adapterLost("went down")
        case .unregistered:
            adapterLost("was removed")
        case .leConnectionComplete(let status, let handle, let role, _):
            // Role 0x01: we are the peripheral, so this connection (or failed attempt) ended
            // our advertising (Core Spec Vol 6 Part B §4.4.2). Role 0x00 links are not ours.
            guard role == 0x01 else { return }
            if status == 0 {
                peripheralHandles.insert(handle)
                disconnectReasons[handle] = nil  // a stale reason of an earlier link with this handle
            }
            isAdvertising = false
            updateAdvertising()
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == 0 else { return }
            peripheralHandles.remove(handle)
            // Kept for the bearer's "disconnected" line, which may come before or after this.
            disconnectReasons[handle] = reason
            if disconnectReasons.count > 64 { disconnectReasons.removeAll() }
            updateAdvertising()
        }
    }

    // MARK: - Advertising

    /// Brings the controller's advertising in line with what is wanted: on while wanted, the
    /// adapter is ready and fewer than `maxConnections` centrals are connected; off otherwise.
    /// Turning it on always sends the whole configuration (disable, parameters, data, scan
    /// response, enable): the controller stopped at the last connection, and this also
    /// covers new payloads after a reload.
    func updateAdvertising() {
        guard adapterState == .ready, let controller, !advertisingBusy else { return }
        let connected = max(peripheralHandles.count, links.count)
        let want = advertisingWanted && !stopping && connected < maxConnections
        guard want != isAdvertising || (want && advertisingStale) else { return }
        advertisingBusy = true
        let payloads = self.payloads
        let generation = self.generation
        commandThread.runIfActive(eventLoop: eventLoop) { () throws -> Bool in
            if want {
                _ = try? controller.send(AdvertisingPayloads.disableCommand)  // Command Disallowed when off: fine
                for command in payloads.configurationCommands { try controller.send(command) }
                try controller.send(AdvertisingPayloads.enableCommand)
            } else {
                try controller.send(AdvertisingPayloads.disableCommand)
            }
            return want
        }.whenComplete { result in
            guard generation == self.generation else { return }
            self.advertisingBusy = false
            switch result {
            case .success(let on):
                if on, payloads == self.payloads { self.advertisingStale = false }
                if on != self.isAdvertising {
                    self.isAdvertising = on
                    self.advertisingChanged(on)
                }
                self.advertisingRefusalLogged = false
            case .failure(let error):
                let wasOn = self.isAdvertising
                self.isAdvertising = false
                if wasOn { self.advertisingChanged(false) }
                if case .commandFailed(0x0C)? = (error as? KernelTransportError)?.kind, !self.links.isEmpty {
                    // Command Disallowed: the controller cannot advertise while connected.
                    if !self.advertisingRefusalLogged {
                        self.advertisingRefusalLogged = true
                        self.logger.info("the controller does not advertise while connected; advertising resumes after a disconnection")
                    }
                    return
                }
                self.logger.warning("cannot \(want ? "start" : "stop") advertising on \(self.adapterName): \(error)")
                return
            }
            // Something changed meanwhile (a connection, a disconnection, a control op).
            self.updateAdvertising()
        }
    }

    /// New payloads (reload): advertise with them.
    func advertisingPayloadsChanged() {
        advertisingStale = true
        updateAdvertising()
    }

    /// Runs a blocking HCI job on the command thread, after the ones already queued.
    func runCommand(_ body: @escaping @Sendable () -> Void) {
        commandThread.submit { _ in body() }
    }

    // MARK: - Connections

    private func accepted(_ bearer: KernelATTBearer) {
        guard adapterState == .ready, !stopping else {
            bearer.close()
            return
        }
        let handle = bearer.connectionHandle()
        var chosen: ConnectionID
        if let handle, links[ConnectionID(handle)] == nil {
            chosen = ConnectionID(handle)
        } else {
            repeat {
                chosen = ConnectionID(spareConnectionID)
                spareConnectionID = spareConnectionID == .max ? 0x1000 : spareConnectionID + 1
            } while links[chosen] != nil
        }
        let security = (try? bearer.securityLevel())?.level ?? .low
        let id = chosen
        links[id] = KernelLink(bearer: bearer, handle: handle, security: security)
        server.connect(id, security: security)
        if let handle, peripheralHandles.insert(handle).inserted {
            // The monitor has not reported this connection yet: it ended advertising all the same.
            isAdvertising = false
        }
        centralConnected(bearer.peer.address, type: "\(bearer.peer.type)", handle: handle)
        bearer.start(
            on: eventLoop,
            onPDU: { [weak self] pdu in self?.received(pdu, on: id, from: bearer) },
            onClose: { [weak self] reason in self?.bearerClosed(id, bearer: bearer, reason: reason) })
        updateAdvertising()
    }

    private func received(_ pdu: [UInt8], on id: ConnectionID, from bearer: KernelATTBearer) {
        guard let link = links[id], link.bearer === bearer else { return }
        logger.trace("\(id) < \(pdu.hexString)")
        // The kernel's SMP may have encrypted the link since the last PDU (the central paired
        // after Insufficient Encryption): the server must know before it checks permissions.
        if let level = (try? bearer.securityLevel())?.level, level != link.security {
            links[id]?.security = level
            server.setSecurity(id, level)
            logger.info("\(bearer.peer.address): security \(level)")
        }
        process(server.receive(pdu, from: id, now: now))
    }

    private func bearerClosed(_ id: ConnectionID, bearer: KernelATTBearer, reason: KernelATTBearer.CloseReason) {
        guard let link = links[id], link.bearer === bearer else { return }
        links[id] = nil
        bearer.close()
        process(server.disconnect(id))
        var why: String?
        if case .error(let code) = reason { why = "read error \(code)" }
        connectionEnded(link, reason: nil, why: why)
        if let handle = link.handle { peripheralHandles.remove(handle) }
        updateAdvertising()
    }

    /// Logs the disconnection and tells control clients. The HCI reason comes from the
    /// adapter monitor's Disconnection Complete, which may arrive just after the socket's
    /// ECONNRESET: wait briefly for it.
    private func connectionEnded(_ link: KernelLink, reason: HCIStatus?, why: String?, waited: Bool = false) {
        let known = reason ?? link.handle.flatMap { disconnectReasons.removeValue(forKey: $0) }.map { HCIStatus($0) }
        if known == nil, why == nil, !waited {
            eventLoop.scheduleTask(in: .milliseconds(100)) { self.connectionEnded(link, reason: nil, why: nil, waited: true) }
            return
        }
        centralDisconnected(link.bearer.peer.address, reason: known ?? .connectionTimeout, loggedReason: known.map { "\($0)" } ?? why ?? "unknown")
    }

    /// Performs the ATT server's outputs: events, queued PDUs, bearers to close.
    func process(_ outputs: [ATTServerOutput]) {
        for output in outputs {
            switch output {
            case .event(let event):
                emit(event)
            case .outgoingAvailable(let id):
                drain(id)
            case .closeBearer(let id, let reason):
                guard let link = links.removeValue(forKey: id) else { continue }
                logger.warning("\(id): closing the link to \(link.bearer.peer.address) (\(reason))")
                link.bearer.close()
                if let handle = link.handle, let controller {
                    commandThread.submit { _ in
                        _ = try? controller.send(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
                    }
                }
                connectionEnded(link, reason: nil, why: "\(reason)")
            }
        }
        armTimer()
    }

    /// Sends the connection's queued PDUs while its socket takes them; when it is full the
    /// PDU in hand is kept and sending resumes once the socket is writable (the rest stays
    /// in the ATT server's queue, so `notify` answers busy when it is full).
    private func drain(_ id: ConnectionID) {
        guard var link = links[id], !link.waitingForRoom else { return }
        var later: [ATTServerOutput] = []
        while true {
            let pdu: [UInt8]
            if let unsent = link.unsent {
                pdu = unsent
                link.unsent = nil
            } else if let (next, outputs) = server.dequeueOutgoing(for: id) {
                pdu = next
                later += outputs
            } else {
                break
            }
            do {
                guard try link.bearer.trySend(pdu) else {
                    link.unsent = pdu
                    link.waitingForRoom = true
                    let bearer = link.bearer
                    bearer.whenWritable(on: eventLoop) { [weak self] in self?.writable(id, bearer: bearer) }
                    break
                }
            } catch {
                // The link is going: the bearer's onClose cleans up.
                logger.debug("\(id): \(error)")
                break
            }
            logger.trace("\(id) > \(pdu.hexString)")
            if let code = Self.securityErrorCode(pdu), !link.securityRequested {
                link.securityRequested = true
                requestSecurity(link, id: id, code: code)
            }
        }
        links[id] = link
        if !later.isEmpty { process(later) }
    }

    private func writable(_ id: ConnectionID, bearer: KernelATTBearer) {
        guard links[id]?.bearer === bearer else { return }
        links[id]?.waitingForRoom = false
        drain(id)
    }

    private func pairingConfirmed(_ c: KernelPairingAgent.Confirmation) {
        let method = c.justWorks ? "Just Works" : "numeric comparison \(c.value)"
        if c.accepted {
            logger.info("pairing with \(c.peer.address): accepted \(method) (the kernel asked for a user confirmation)")
        } else {
            logger.warning("pairing with \(c.peer.address): could not answer the kernel's \(method) confirmation")
        }
    }

    /// The ATT error code of an Error Response for Insufficient Authentication (0x05) or
    /// Insufficient Encryption (0x0F), Core Spec Vol 3 Part F §3.4.1.1; nil for any other PDU.
    static func securityErrorCode(_ pdu: [UInt8]) -> UInt8? {
        guard pdu.count == 5, pdu[0] == 0x01, pdu[4] == 0x05 || pdu[4] == 0x0F else { return nil }
        return pdu[4]
    }

    /// The server refused for lack of encryption: raise the link's security (BT_SECURITY),
    /// so the kernel sends an SMP Security Request and the central pairs or re-encrypts
    /// before it retries (as iOS does).
    private func requestSecurity(_ link: KernelLink, id: ConnectionID, code: UInt8) {
        let what = code == 0x05 ? "Insufficient Authentication" : "Insufficient Encryption"
        do {
            try link.bearer.requestSecurity(.medium)
            logger.info("\(id): \(what); asked \(link.bearer.peer.address) to pair (SMP Security Request)")
        } catch {
            logger.warning(
                "\(id): \(what), and \(error). If \(adapterName) was powered on before any mgmt client touched it, power-cycle it (btmgmt -i \(adapterName) power off; gattd powers it on again)"
            )
        }
    }

    // MARK: - Events: log lines, control clients, persistence

    private func emit(_ event: ATTServerEvent) {
        let links = self.links
        attEvent(event) { links[$0]?.bearer.peer.address.description }
    }
}

/// One connected central on the kernel transport.
struct KernelLink {
    let bearer: KernelATTBearer
    /// The LE connection handle (for HCI Disconnect), when the kernel told it.
    let handle: UInt16?
    var security: SecurityLevel
    /// A PDU taken from the ATT server that the socket had no room for: sent first.
    var unsent: [UInt8]?
    var waitingForRoom = false
    /// BT_SECURITY was raised once already (after Insufficient Encryption).
    var securityRequested = false
}
