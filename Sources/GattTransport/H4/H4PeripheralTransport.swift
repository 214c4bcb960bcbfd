import GattCore
import GattHost
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The H4 transports (`tcp:`, `unix:`, `serial:`, `user:`) below the seam: an
/// `H4Transport` connection to the controller and the sans-I/O `Host` that runs HCI, ACL
/// and L2CAP on it. Everything is confined to `eventLoop`.
public final class H4PeripheralTransport: PeripheralTransport, @unchecked Sendable {
    public let spec: TransportSpec
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    private let logger: Logger
    private let origin = ContinuousClock.now
    private var hostConfiguration: HostConfiguration
    private var host: Host
    /// The daemon's IRK (`setLocalIRK`), kept across reloads.
    private var localIRK: [UInt8]?
    private var channel: H4Transport?
    private var timer: Scheduled<Void>?
    /// The deadline `timer` is armed for (re-armed only when the host's changes).
    private var timerDeadline: Duration?
    private var closing = false
    /// A channel flush is queued for the end of this read (`readCompleted`) or event-loop
    /// turn (`scheduleFlush`).
    private var flushScheduled = false
    /// Inside a read of the controller's packets (`received` until `readCompleted`).
    private var reading = false
    /// `send` queued an ATT PDU that `flush` has not pumped yet.
    private var sendQueued = false
    /// The time of the packet being handled: read once per packet, not per call it makes.
    private var packetTime: Duration?
    /// Trace level is on: every packet is logged (asked once; the level is set at bootstrap).
    private let tracesPackets: Bool
    /// `--btsnoop` or the `capture` op: every HCI packet both ways, as it crosses the H4 link.
    var btsnoop: BtsnoopWriter?
    private var bonds: [Bond] = []
    /// What credit-based channels are accepted for (`setL2CAPChannelServers`), kept across resets.
    private var channelServers: [L2CAPChannelServer] = []
    /// Whether Enhanced ATT bearers are accepted (`setEnhancedATT`), kept across resets.
    private var enhancedATT = false
    /// The program ends of the host's credit-based channels.
    private lazy var channelPump = H4ChannelPump(
        eventLoop: eventLoop,
        calls: H4ChannelPump.HostCalls(
            send: { [unowned self] id, sdu in process(host.send(sdu: sdu, on: id, now: now)) },
            consumed: { [unowned self] id in process(host.consumed(on: id, now: now)) },
            close: { [unowned self] id in process(host.close(id, now: now)) },
            warning: { [unowned self] m in onEvent?(.warning(m)) },
            readyWhenSent: { [unowned self] id in process(host.readyWhenSent(id, now: now)) }))

    public init(spec: TransportSpec, eventLoop: any EventLoop, configuration: GattConfiguration, logger: Logger, btsnoop: BtsnoopWriter? = nil) {
        self.spec = spec
        self.btsnoop = btsnoop
        self.eventLoop = eventLoop
        self.logger = logger
        self.tracesPackets = logger.logLevel <= .trace
        self.hostConfiguration = Self.hostConfiguration(configuration)
        self.host = Host(configuration: hostConfiguration)
    }

    private static func hostConfiguration(_ configuration: GattConfiguration) -> HostConfiguration {
        var c = HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising)
        c.security = configuration.security
        return c
    }

    private var now: Duration { packetTime ?? ContinuousClock.now - origin }

    public func refusal(of configuration: GattConfiguration) -> String? { nil }

    public func open() -> EventLoopFuture<Void> {
        H4Transport.connect(
            to: spec, group: eventLoop,
            onPacket: { [weak self] packet in self?.received(packet) },
            onReadComplete: { [weak self] in self?.readCompleted() },
            onClose: { [weak self] error in self?.closed(error) }
        ).flatMapErrorThrowing { error in
            throw TransportOpenFailure("cannot open \(self.spec): \(Self.describe(error))", retry: .withBackoff)
        }.map { channel in
            self.channel = channel
            self.logger.info("connected to the controller at \(self.spec)")
            self.host = Host(configuration: self.hostConfiguration)
            self.host.setBonds(self.bonds)
            self.host.setL2CAPChannelServers(self.channelServers)
            self.host.setEnhancedATT(self.enhancedATT)
            self.process(self.host.start(now: self.now))
        }
    }

    /// One ATT PDU: on the fixed ATT channel, or an Enhanced ATT bearer's channel on PSM 0x0027.
    public func send(_ pdu: [UInt8], on bearer: BearerID) {
        host.send(pdu, on: bearer)
        sendQueued = true
    }
    public func closeEnhancedBearer(_ id: BearerID) { process(host.closeEnhancedBearer(id, now: now)) }
    /// The host accepts Enhanced Credit Based channels on PSM 0x0027 as ATT bearers.
    public var supportsEnhancedATT: Bool { true }
    public func setEnhancedATT(_ enabled: Bool) {
        enhancedATT = enabled
        host.setEnhancedATT(enabled)
    }
    /// Only `send` queues without pumping (every other path pumps what it queues), so with
    /// nothing sent since the last flush there is nothing to do.
    public func flush() {
        guard sendQueued else { return }
        sendQueued = false
        process(host.flush(now: now))
    }
    /// Every set goes to the host: all on the air at once with extended advertising, taking
    /// turns with legacy advertising (`ControllerInfo.limits.setsTakeTurns`, in `.ready`).
    public func setAdvertising(_ sets: [AdvertisingSet]) { process(host.setAdvertising(sets, now: now)) }
    public func disconnect(_ id: ConnectionID, reason: HCIStatus) { process(host.disconnect(id, reason: reason, now: now)) }
    /// A Security Request from the host's Security Manager (when pairing is configured).
    public func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError) { process(host.requestSecurity(id, now: now)) }
    public func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer) { process(host.respondToPairing(id, answer, now: now)) }
    public func requestLink(_ id: ConnectionID, _ request: LinkRequest) { process(host.requestLink(id, request, now: now)) }
    public func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind) { process(host.cancelLinkRequest(id, kind, now: now)) }
    /// The host serves ATT itself: no GATT-level accesses or subscribers to answer.
    public func serveDatabase(_ database: GATTDatabase) {}
    public func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>) {}
    public func updateGATT(_ handle: AttributeHandle, _ value: [UInt8]) {}

    /// Our IRK for the host: identity distribution and private addresses.
    public func setLocalIRK(_ irk: [UInt8]) {
        hostConfiguration.localIRK = irk
        localIRK = irk
    }

    /// Credit-based channels to these servers are accepted and pumped (`H4ChannelPump`).
    public func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        channelServers = servers
        host.setL2CAPChannelServers(servers)
    }

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { channelPump.take(ticket) }

    /// The host keeps no keys besides `setBonds`' set: nothing more to forget.
    public func removeBond(_ bond: Bond) {}
    /// The host owns its controller: it opens it, as the daemon would.
    public func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> { probeByOpening(timeout: timeout) }

    public func setBonds(_ bonds: [Bond]) {
        self.bonds = bonds
        host.setBonds(bonds)
    }

    /// Reload: new links use the new security settings; links already up keep theirs.
    public func configure(_ configuration: GattConfiguration) {
        hostConfiguration = Self.hostConfiguration(configuration)
        hostConfiguration.localIRK = localIRK
        process(host.updateConfiguration(hostConfiguration, now: now))
    }

    public func close() -> EventLoopFuture<Void> {
        closing = true
        channelPump.shutdown()
        timer?.cancel()
        timerDeadline = nil
        btsnoop?.close()
        guard let channel else { return eventLoop.makeSucceededVoidFuture() }
        self.channel = nil
        return channel.close()
    }

    // MARK: - Data path

    private func received(_ packet: H4Packet) {
        if tracesPackets { logger.trace("< \(packet.encoded.hexString)") }
        btsnoop?.write(packet, direction: .received)
        reading = true
        let now = ContinuousClock.now - origin
        packetTime = now
        defer { packetTime = nil }
        process(host.receive(packet, now: now))
    }

    /// The end of a read from the controller: what its packets made leaves now.
    private func readCompleted() {
        reading = false
        guard flushScheduled else { return }
        flushScheduled = false
        channel?.flush()
    }

    /// Write many, flush once: packets from every core step of a read from the controller
    /// (several Number Of Completed Packets) or of this event-loop turn (a read batch of
    /// control requests) leave in one `writev`, at the end of the read or after the turn's
    /// I/O events, instead of one syscall per step.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        guard !reading else { return }  // `readCompleted` flushes
        eventLoop.execute { [self] in
            guard flushScheduled else { return }
            flushScheduled = false
            channel?.flush()
        }
    }

    private func closed(_ error: (any Error)?) {
        channel = nil
        channelPump.closeAll()
        reading = false
        flushScheduled = false
        timer?.cancel()
        timerDeadline = nil
        guard !closing else { return }
        onEvent?(.lost(reason: "lost the controller at \(spec)" + (error.map { ": \(Self.describe($0))" } ?? "")))
    }

    /// Performs the host's outputs and re-arms its timer: packets are written first (one
    /// flush for all of them), then the events are reported (so packets leave in the order
    /// the host made them).
    private func process(_ outputs: [HostOutput]) {
        guard !outputs.isEmpty else { return armTimer() }
        var fatal: String?
        var wrote = false
        var events = false
        for o in outputs {
            switch o {
            case .send(let packet):
                if tracesPackets { logger.trace("> \(packet.encoded.hexString)") }
                channel?.write(packet)
                btsnoop?.write(packet, direction: .sent)
                wrote = true
            case .event(.controllerReady): break  // `.transport(.ready)` carries it
            case .event(.fatal(let m)): fatal = m
            case .event: events = true
            }
        }
        if wrote { scheduleFlush() }
        armTimer()
        // A second pass rather than an array of events per call.
        if events {
            for o in outputs {
                switch o {
                case .event(.transport(let e)): onEvent?(e)
                case .event(.warning(let m)): onEvent?(.warning(m))
                case .event(.channel(let e)):
                    if let opened = channelPump.handle(e), case .opened(let id, _, _, _, _) = e {
                        onEvent?(.l2capChannelOpened(id.connection, opened))
                    }
                default: break
                }
            }
        }
        if let fatal {
            logger.error("\(fatal); resetting the transport")
            channel?.close()  // `closed` reports `.lost`
        }
    }

    private func armTimer() {
        let deadline = Self.nextDeadline(of: &host)
        // Most packets leave the deadline as it was: no cancel and schedule per packet.
        if deadline == timerDeadline, timer != nil || deadline == nil { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline else { return }
        timer = eventLoop.scheduleTask(in: TimeAmount(max(.zero, deadline - now))) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.timerDeadline = nil
            self.process(self.host.tick(now: self.now))
        }
    }

    /// Read in place: a getter called on the stored `host` copies the whole Host first.
    private static func nextDeadline(of host: inout Host) -> Duration? { host.nextDeadline }

    /// A transport error in a few words: the system's text for an errno ("Connection
    /// refused") rather than NIO's nested description.
    public static func describe(_ error: any Error) -> String {
        if let e = error as? NIOConnectionError, let first = e.connectionErrors.first {
            return describe(first.error)
        }
        if let e = error as? IOError {
            return String(cString: strerror(e.errnoCode))
        }
        return "\(error)"
    }
}

extension [UInt8] {
    /// Lower-case hex, for trace lines.
    public var hexString: String { AttributeValueLiteral.hexString(self) }
}
