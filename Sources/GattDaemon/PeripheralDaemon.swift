import GattCore
import GattTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The I/O shell around the sans-I/O `Host` for H4 transports: one event loop
/// owns the transport, feeds the host every packet, runs its timers, writes
/// what it asks, and reconnects with backoff when the transport goes away.
///
/// All mutable state is confined to `eventLoop`.
public final class PeripheralDaemon: @unchecked Sendable {
    /// What the daemon needs besides the config and the transport.
    public struct Options: Sendable {
        /// Time a control client has to answer a forwarded read/write (`--request-timeout`).
        public var requestTimeout: Duration = .seconds(5)
        /// Where `persist` characteristics' values are kept; nil: not kept.
        public var stateDirectory: String?
        /// systemd notifications (no-ops unless started by systemd with Type=notify).
        public var notifier = SystemdNotifier()
        public init() {}
    }

    public let eventLoop: any EventLoop
    public let logger: Logger
    public let spec: TransportSpec
    private let group: any EventLoopGroup
    private let origin = ContinuousClock.now

    var configuration: GattConfiguration
    var payloads: AdvertisingPayloads
    var host: Host
    private var transport: H4Transport?
    private var timer: Scheduled<Void>?
    private var backoff: TimeAmount = .milliseconds(250)
    private var stopping = false
    private var stopPromise: EventLoopPromise<Void>?
    private var stopFinished = false
    private var identityLogged = false
    let options: Options
    let persisted: PersistedValues?
    var readyNotified = false
    private var watchdog: RepeatedTask?
    private var randomAddress: BluetoothAddress?
    /// Whether the `advertise` op wants advertising (kept across transport resets).
    var advertisingWanted = true
    var controlAttached = false
    /// Called on `eventLoop` for every host event.
    public var onEvent: ((HostEvent) -> Void)?
    /// `PeripheralControl`: where control events go (set by `ControlServer`).
    public var controlEventHandler: ((ControlEvent) -> Void)?

    public init(configuration: GattConfiguration, payloads: AdvertisingPayloads, spec: TransportSpec, group: any EventLoopGroup, logger: Logger,
                options: Options = Options()) {
        self.configuration = configuration
        self.payloads = payloads
        self.spec = spec
        self.group = group
        self.eventLoop = group.next()
        self.logger = logger
        self.options = options
        self.persisted = options.stateDirectory.map { PersistedValues(stateDirectory: $0, logger: logger) }
        if configuration.advertising.ownAddressType == .random { randomAddress = BluetoothAddress.randomStatic() }
        var database = configuration.makeDatabase()
        if let persisted {
            let n = persisted.apply(to: &database)
            if n > 0 { logger.info("restored \(n) persisted value\(n == 1 ? "" : "s")") }
        }
        self.host = Host(configuration: HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising),
                         att: ATTServer(database: database))
        self.host = makeHost(database: database)
    }

    private func hostConfiguration(_ c: GattConfiguration) -> HostConfiguration {
        var hc = HostConfiguration(deviceName: c.name, advertising: c.advertising)
        if c.advertising.ownAddressType == .random {
            if randomAddress == nil { randomAddress = BluetoothAddress.randomStatic() }
            hc.randomAddress = randomAddress
        }
        return hc
    }

    /// A fresh host serving `database`, with the daemon's ATT settings and control state.
    private func makeHost(database: GATTDatabase) -> Host {
        var ac = ATTServerConfiguration()
        ac.controlTimeout = options.requestTimeout
        var h = Host(configuration: hostConfiguration(configuration), att: ATTServer(database: database, configuration: ac))
        h.setControlClientAttached(controlAttached)
        if !advertisingWanted { _ = h.setAdvertising(false, now: now) }
        return h
    }

    var now: Duration { ContinuousClock.now - origin }

    // MARK: - Lifecycle

    /// Connects (retrying with backoff) and runs until `stop()` completes.
    public func start() {
        eventLoop.execute {
            self.connect()
            self.startWatchdog()
        }
    }

    private func startWatchdog() {
        guard let every = options.notifier.watchdogPingInterval, every > .zero else { return }
        let ns = Self.nanoseconds(every)
        logger.debug("systemd watchdog: pinging every \(Self.format(.nanoseconds(ns)))")
        let notifier = options.notifier
        watchdog = eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .nanoseconds(ns)) { _ in
            try? notifier.watchdog()
        }
    }

    /// Stops advertising, disconnects centrals politely and closes the transport.
    /// The future completes when done (at most ~2 s).
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            if let p = self.stopPromise { return p.futureResult }
            let p = self.eventLoop.makePromise(of: Void.self)
            self.stopPromise = p
            self.stopping = true
            try? self.options.notifier.stopping()
            guard self.transport != nil, self.host.isReady else {
                self.finishStop()
                return p.futureResult
            }
            self.logger.info("stopping: advertising off, disconnecting \(self.host.connections.count) central(s)")
            self.process(self.host.shutdown(now: self.now))
            self.eventLoop.scheduleTask(in: .seconds(2)) { self.finishStop() }
            return p.futureResult
        }
    }

    private func finishStop() {
        guard let p = stopPromise, !stopFinished else { return }
        stopFinished = true
        timer?.cancel()
        watchdog?.cancel()
        persisted?.flush()
        let t = transport
        transport = nil
        if let t {
            t.close().whenComplete { _ in p.succeed() }
        } else {
            p.succeed()
        }
    }

    private func connect() {
        guard !stopping else { return }
        H4Transport.connect(
            to: spec, group: eventLoop,
            onPacket: { [weak self] packet in self?.received(packet) },
            onClose: { [weak self] error in self?.transportClosed(error) }
        ).whenComplete { result in
            switch result {
            case .success(let t):
                self.transport = t
                self.backoff = .milliseconds(250)
                self.logger.info("connected to the controller at \(self.spec)")
                self.host = self.makeHost(database: self.host.att.database)
                self.process(self.host.start(payloads: self.payloads, now: self.now))
            case .failure(let error):
                self.retry(after: "cannot open \(self.spec): \(error)")
            }
        }
    }

    private func retry(after message: String) {
        guard !stopping else { return }
        logger.warning("\(message); retrying in \(Self.format(backoff))")
        eventLoop.scheduleTask(in: backoff) { self.connect() }
        backoff = min(backoff * 2, .seconds(10))
    }

    private func transportClosed(_ error: (any Error)?) {
        transport = nil
        timer?.cancel()
        if stopping { return }
        for c in host.connections.values {
            emit(.disconnected(c, reason: .connectionTimeout))
        }
        host = makeHost(database: host.att.database)
        retry(after: "lost the controller at \(spec)" + (error.map { ": \($0)" } ?? ""))
    }

    // MARK: - Data path

    private func received(_ packet: H4Packet) {
        logger.trace("< \(packet.encoded.hexString)")
        process(host.receive(packet, now: now))
    }

    /// Performs the host's outputs and re-arms the timer.
    func process(_ outputs: [HostOutput]) {
        for o in outputs {
            switch o {
            case .send(let packet):
                logger.trace("> \(packet.encoded.hexString)")
                transport?.send(packet)
            case .event(let e):
                emit(e)
            }
        }
        armTimer()
    }

    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard let deadline = host.nextDeadline else { return }
        let delay = max(.zero, deadline - now)
        timer = eventLoop.scheduleTask(in: .nanoseconds(Self.nanoseconds(delay))) {
            self.process(self.host.tick(now: self.now))
        }
    }

    private func emit(_ e: HostEvent) {
        log(e)
        onEvent?(e)
        observe(e)
        if case .fatal = e, let t = transport {
            // Drop the transport and start over with a fresh bring-up.
            t.close()
        }
        if stopping, host.isIdle { finishStop() }
    }

    // MARK: - Logging: one concise line per connection event

    private func log(_ e: HostEvent) {
        let db = host.att.database
        func name(_ c: Int) -> String { c < db.characteristics.count ? db.characteristics[c].displayName : "#\(c)" }
        switch e {
        case .controllerReady(let info):
            if !identityLogged {
                identityLogged = true
                let v = info.version.map { "HCI \($0.hciVersion)/LMP \($0.lmpVersion), company \($0.companyIdentifier)" } ?? "unknown version"
                logger.info("controller \(info.address): \(v), LE ACL \(info.aclDataPacketLength) bytes x \(info.totalACLDataPackets)")
            }
        case .advertisingChanged(let on):
            logger.info(on ? "advertising as \"\(configuration.advertising.localName ?? configuration.name)\"" : "advertising stopped")
        case .connected(let c):
            logger.info("connected: \(c.peerAddress) (\(c.peerAddressType)), handle \(c.handle)")
        case .disconnected(let c, let reason):
            logger.info("disconnected: \(c.peerAddress), reason \(reason)")
        case .att(let a):
            switch a {
            case .mtuExchanged(let id, let mtu): logger.info("\(id): MTU \(mtu)")
            case .subscriptionChanged(let id, let c, let n, let i):
                logger.info("\(id): \(n || i ? "subscribed to" : "unsubscribed from") \(name(c))\(i ? " (indications)" : "")")
            case .written(let id, let c, let v): logger.info("\(id): wrote \(v.count) bytes to \(name(c))")
            case .indicationTimedOut(let id, let c): logger.warning("\(id): indication of \(name(c)) not confirmed in 30 s; disconnecting")
            case .requestTimedOut(let r): logger.warning("control request \(r) not answered in time; answered Unlikely Error")
            default: logger.debug("\(a)")
            }
        case .warning(let m):
            logger.warning("\(m)")
        case .fatal(let m):
            logger.error("\(m); resetting the transport")
        }
    }

    static func nanoseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
    }

    static func format(_ t: TimeAmount) -> String {
        let ms = t.nanoseconds / 1_000_000
        return ms >= 1000 ? "\(Double(ms) / 1000) s" : "\(ms) ms"
    }
}

extension [UInt8] {
    var hexString: String { map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}

extension BluetoothAddress {
    /// A random static address (Core Spec Vol 6 Part B §1.3.2.1): two top bits set.
    static func randomStatic() -> BluetoothAddress {
        var b = (0..<6).map { _ in UInt8.random(in: 0...255) }
        b[0] |= 0xC0
        return BluetoothAddress(bytes: b) ?? .zero
    }
}
