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
    public let eventLoop: any EventLoop
    public let logger: Logger
    public let spec: TransportSpec
    private let group: any EventLoopGroup
    private let origin = ContinuousClock.now

    private var configuration: GattConfiguration
    private var payloads: AdvertisingPayloads
    private var host: Host
    private var transport: H4Transport?
    private var timer: Scheduled<Void>?
    private var backoff: TimeAmount = .milliseconds(250)
    private var stopping = false
    private var stopPromise: EventLoopPromise<Void>?
    private var identityLogged = false
    /// Called on `eventLoop` for every host event (the control socket subscribes here).
    public var onEvent: ((HostEvent) -> Void)?

    public init(configuration: GattConfiguration, payloads: AdvertisingPayloads, spec: TransportSpec, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.payloads = payloads
        self.spec = spec
        self.group = group
        self.eventLoop = group.next()
        self.logger = logger
        self.host = Self.makeHost(configuration, database: configuration.makeDatabase())
    }

    private static func makeHost(_ c: GattConfiguration, database: GATTDatabase) -> Host {
        var hc = HostConfiguration(deviceName: c.name, advertising: c.advertising)
        if c.advertising.ownAddressType == .random { hc.randomAddress = BluetoothAddress.randomStatic() }
        return Host(configuration: hc, att: ATTServer(database: database))
    }

    private var now: Duration { ContinuousClock.now - origin }

    // MARK: - Lifecycle

    /// Connects (retrying with backoff) and runs until `stop()` completes.
    public func start() {
        eventLoop.execute { self.connect() }
    }

    /// Stops advertising, disconnects centrals politely and closes the transport.
    /// The future completes when done (at most ~2 s).
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            if let p = self.stopPromise { return p.futureResult }
            let p = self.eventLoop.makePromise(of: Void.self)
            self.stopPromise = p
            self.stopping = true
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
        guard let p = stopPromise else { return }
        timer?.cancel()
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
                self.host = Self.makeHost(self.configuration, database: self.host.att.database)
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
        host = Self.makeHost(configuration, database: host.att.database)
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
        timer = eventLoop.scheduleTask(in: .nanoseconds(Int64(delay.components.seconds) * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)) {
            self.process(self.host.tick(now: self.now))
        }
    }

    private func emit(_ e: HostEvent) {
        log(e)
        onEvent?(e)
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
