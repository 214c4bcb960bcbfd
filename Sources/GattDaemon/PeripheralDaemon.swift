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
    public typealias Options = DaemonOptions

    public let eventLoop: any EventLoop
    public let logger: Logger
    public let spec: TransportSpec
    private let group: any EventLoopGroup
    private let origin = ContinuousClock.now

    var configuration: GattConfiguration
    var payloads: AdvertisingPayloads
    var host: Host
    private var transport: H4Transport?
    var timer: Scheduled<Void>?
    private var backoff: TimeAmount = .milliseconds(250)
    /// Failed attempts since the transport was last up: only the first is a warning.
    private var failedAttempts = 0
    var shutdown = DaemonShutdown()
    private var identityLogged = false
    let options: Options
    let persisted: PersistedValues?
    var readyNotified = false
    var watchdog: RepeatedTask?
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
        self.persisted = options.persistedValues(logger: logger)
        let database = DaemonOptions.initialDatabase(configuration, persisted: persisted, logger: logger)
        self.host = Host(configuration: HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising),
                         att: ATTServer(database: database))
        self.host = makeHost(database: database)
    }

    private func hostConfiguration(_ c: GattConfiguration) -> HostConfiguration {
        HostConfiguration(deviceName: c.name, advertising: c.advertising)
    }

    /// A fresh host serving `database`, with the daemon's ATT settings and control state.
    private func makeHost(database: GATTDatabase) -> Host {
        var h = Host(configuration: hostConfiguration(configuration), att: ATTServer(database: database, configuration: options.attServerConfiguration))
        h.setControlClientAttached(controlAttached)
        if !advertisingWanted { _ = h.setAdvertising(false, now: now) }
        return h
    }

    var now: Duration { ContinuousClock.now - origin }

    // MARK: - Lifecycle

    /// Connects (retrying with backoff) and runs until `stop()` completes. The future
    /// succeeds at once: a controller that cannot be reached is retried, never fatal.
    @discardableResult
    public func start() -> EventLoopFuture<Void> {
        eventLoop.submit {
            self.connect()
            self.watchdog = self.options.notifier.scheduleWatchdog(on: self.eventLoop)
            if self.watchdog != nil, let every = self.options.notifier.watchdogPingInterval {
                self.logger.debug("systemd watchdog: pinging every \(TimeAmount(every).logDescription)")
            }
        }
    }

    /// Stops advertising, disconnects centrals politely and closes the transport.
    /// The future completes when done (at most ~2 s).
    public func stop() -> EventLoopFuture<Void> {
        stopOnce {
            guard self.transport != nil, self.host.isReady else {
                self.finishStop()
                return
            }
            self.eventLog.stopping(centrals: self.host.connections.count)
            self.process(self.host.shutdown(now: self.now))
            self.eventLoop.scheduleTask(in: .seconds(2)) { self.finishStop() }
        }
    }

    private func finishStop() {
        guard let p = finishingStop() else { return }
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
                self.failedAttempts = 0
                self.logger.info("connected to the controller at \(self.spec)")
                self.host = self.makeHost(database: self.host.att.database)
                self.process(self.host.start(payloads: self.payloads, now: self.now))
            case .failure(let error):
                self.retry(after: "cannot open \(self.spec): \(Self.describe(error))")
            }
        }
    }

    private func retry(after message: String) {
        guard !stopping else { return }
        failedAttempts += 1
        let line: Logger.Message = "\(message); retrying in \(backoff.logDescription)"
        // A controller that is away for hours must not fill the journal: the first failure
        // is a warning, the repeats (every 10 s at most) are debug lines.
        if failedAttempts == 1 { logger.warning(line) } else { logger.debug(line) }
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
        retry(after: "lost the controller at \(spec)" + (error.map { ": \(Self.describe($0))" } ?? ""))
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

    private func emit(_ e: HostEvent) {
        onEvent?(e)
        switch e {
        case .controllerReady(let info):
            if !identityLogged {
                identityLogged = true
                let v = info.version.map { "HCI \($0.hciVersion)/LMP \($0.lmpVersion), company \($0.companyIdentifier)" } ?? "unknown version"
                logger.info("controller \(info.address): \(v), LE ACL \(info.aclDataPacketLength) bytes x \(info.totalACLDataPackets)")
            }
        case .advertisingChanged(let on):
            advertisingChanged(on)
        case .connected(let c):
            centralConnected(c.peerAddress, type: "\(c.peerAddressType)", handle: c.handle)
        case .disconnected(let c, let reason):
            centralDisconnected(c.peerAddress, reason: reason)
        case .att(let a):
            let connections = host.connections
            attEvent(a) { connections[$0.rawValue]?.peerAddress.description }
        case .warning(let m):
            logger.warning("\(m)")
        case .fatal(let m):
            logger.error("\(m); resetting the transport")
            // Drop the transport and start over with a fresh bring-up.
            transport?.close()
        }
        if stopping, host.isIdle { finishStop() }
    }
}

extension [UInt8] {
    var hexString: String { map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}

extension PeripheralDaemon {
    /// A transport error in a few words: the system's text for an errno ("Connection
    /// refused") rather than NIO's nested description.
    static func describe(_ error: any Error) -> String {
        if let e = error as? NIOConnectionError, let first = e.connectionErrors.first {
            return describe(first.error)
        }
        if let e = error as? IOError {
            return String(cString: strerror(e.errnoCode))
        }
        return "\(error)"
    }
}
