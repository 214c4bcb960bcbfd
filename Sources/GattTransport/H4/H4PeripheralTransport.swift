import GattCore
import GattHost
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The H4 transports (`tcp:`, `unix:`, `serial:`, `user:`) below the seam: the I/O shell of
/// the sans-I/O `H4Host`, which the daemon's stack runs (`PeripheralStack<H4Host>`). The shell only
/// moves packets: it connects to the controller (`H4Transport`), feeds the host what it reads
/// (`runHost`), writes what the host sends (`perform`), records both (btsnoop, trace lines)
/// and pumps the programs' ends of the host's credit-based channels. No timer, no clock and
/// no loop of its own: the stack's are the daemon's. Everything is confined to `eventLoop`.
public final class H4PeripheralTransport: PeripheralTransport, HostShell, @unchecked Sendable {
    public let spec: TransportSpec
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    public var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)?
    private let logger: Logger
    /// The config's host settings, for `probe` (the daemon's stack has its own `H4Host`).
    private let configuration: GattConfiguration
    /// The link to the controller.
    private var link = Link.idle
    /// Links opened so far: a closed link's late callbacks name an old number and are ignored.
    private var opened = 0
    /// A channel flush is queued for the end of this read (`readCompleted`) or event-loop
    /// turn (`scheduleFlush`).
    private var flushScheduled = false
    /// Inside a read of the controller's packets (`received` until `readCompleted`).
    private var reading = false
    /// Trace level is on: every packet is logged (asked once; the level is set at bootstrap).
    private let tracesPackets: Bool
    /// `--btsnoop` or the `capture` op: every HCI packet both ways, as it crosses the H4 link.
    var btsnoop: BtsnoopWriter?
    /// The program ends of the host's credit-based channels.
    private lazy var channelPump = H4ChannelPump(
        eventLoop: eventLoop,
        calls: H4ChannelPump.HostCalls(
            send: { [unowned self] id, sdu in runHost?({ h, now in h.host.send(sdu: sdu, on: id, now: now) }) },
            consumed: { [unowned self] id in runHost?({ h, now in h.host.consumed(on: id, now: now) }) },
            close: { [unowned self] id in runHost?({ h, now in h.host.close(id, now: now) }) },
            warning: { [unowned self] m in onEvent?(.warning(m)) },
            readyWhenSent: { [unowned self] id in runHost?({ h, now in h.host.readyWhenSent(id, now: now) }) }))

    /// Where the link to the controller is.
    private enum Link {
        /// None yet, or lost (the daemon opens it again).
        case idle
        /// `open` is connecting (link number).
        case opening(Int)
        case open(Int, H4Transport)
        /// The host gave up on the controller (fatal): the stack told the core `.lost` already,
        /// so the channel's closing reports nothing.
        case resetting(Int)
        /// `close`: for good.
        case closed

        var number: Int? {
            switch self {
            case .opening(let n), .open(let n, _), .resetting(let n): n
            case .idle, .closed: nil
            }
        }
    }

    public init(spec: TransportSpec, eventLoop: any EventLoop, configuration: GattConfiguration, logger: Logger, btsnoop: BtsnoopWriter? = nil) {
        self.spec = spec
        self.btsnoop = btsnoop
        self.eventLoop = eventLoop
        self.logger = logger
        self.configuration = configuration
        self.tracesPackets = logger.logLevel <= .trace
    }

    /// The H4 host itself, run by the daemon's stack; this shell performs its outputs.
    public func makeStack(core: Peripheral, configuration: GattConfiguration, clock: @escaping () -> Duration) -> any PeripheralStackDriving {
        let stack = PeripheralStack(core: core, below: H4Host(configuration: configuration))
        stack.attachShell(self, clock: clock)
        return stack
    }

    public func refusal(of configuration: GattConfiguration) -> String? { nil }

    public func open() -> EventLoopFuture<Void> {
        opened += 1
        let n = opened
        link = .opening(n)
        return H4Transport.connect(
            to: spec, group: eventLoop,
            onPacket: { [weak self] packet in self?.received(packet, on: n) },
            onReadComplete: { [weak self] in self?.readCompleted() },
            onClose: { [weak self] error in self?.closed(n, error) }
        ).flatMapErrorThrowing { error in
            if self.link.number == n { self.link = .idle }
            throw TransportOpenFailure("cannot open \(self.spec): \(Self.describe(error))", retry: .withBackoff)
        }.flatMapThrowing { channel in
            guard case .opening(n) = self.link else {
                _ = channel.close()
                throw TransportOpenFailure("the link to \(self.spec) closed while it opened", retry: .withBackoff)
            }
            self.link = .open(n, channel)
            self.logger.info("connected to the controller at \(self.spec)")
            self.runHost?({ h, now in h.start(now: now) })
        }
    }

    /// The host accepts Enhanced Credit Based channels on PSM 0x0027 as ATT bearers.
    public var supportsEnhancedATT: Bool { true }
    /// The host serves ATT itself: no database to register.
    public func serveDatabase(_ database: GATTDatabase) {}
    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { channelPump.take(ticket) }
    /// The host keeps no keys besides `setBonds`' set: nothing more to forget.
    public func removeBond(_ bond: Bond) {}

    /// The host owns its controller: it opens it, as the daemon would. No stack runs for a
    /// probe, so the host's bring-up is driven here: without a core (nothing is advertised) and
    /// without timers (the probe's deadline bounds it).
    public func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> {
        var host = H4Host(configuration: configuration)
        let origin = ContinuousClock.now
        runHost = { [unowned self] call in
            for o in call(&host, ContinuousClock.now - origin) {
                switch o {
                case .event(.transport(let e)): onEvent?(e)
                case .event(.fatal(let reason)): onEvent?(.lost(reason: reason))
                default: perform(o)
                }
            }
        }
        return probeByOpening(timeout: timeout)
    }

    public func close() -> EventLoopFuture<Void> {
        let current = link
        link = .closed
        channelPump.shutdown()
        btsnoop?.close()
        guard case .open(_, let channel) = current else { return eventLoop.makeSucceededVoidFuture() }
        return channel.close()
    }

    // MARK: - Data path

    /// One output of the host, in the order it made them: packets are written (one flush for
    /// a batch), channel events pump, warnings and fatal errors are reported.
    public func perform(_ output: HostOutput) {
        switch output {
        case .send(let packet):
            guard case .open(_, let channel) = link else { return }
            if tracesPackets { logger.trace("> \(packet.encoded.hexString)") }
            channel.write(packet)
            btsnoop?.write(packet, direction: .sent)
            scheduleFlush()
        case .event(.channel(let e)):
            if let opened = channelPump.handle(e), case .opened(let id, _, _, _, _) = e {
                onEvent?(.l2capChannelOpened(id.connection, opened))
            }
        case .event(.warning(let m)): onEvent?(.warning(m))
        case .event(.fatal(let m)):
            logger.error("\(m); resetting the transport")
            guard case .open(let n, let channel) = link else { return }
            link = .resetting(n)
            _ = channel.close()
            runHost?({ h, _ in h.idle(); return [] })
        case .event(.transport), .event(.controllerReady): break  // the stack routes them to the core
        }
    }

    private func received(_ packet: H4Packet, on n: Int) {
        guard case .open(n, _) = link else { return }
        if tracesPackets { logger.trace("< \(packet.encoded.hexString)") }
        btsnoop?.write(packet, direction: .received)
        reading = true
        runHost?({ h, now in h.receive(packet, now: now) })
    }

    /// The end of a read from the controller: what its packets made leaves now.
    private func readCompleted() {
        reading = false
        guard flushScheduled else { return }
        flushScheduled = false
        if case .open(_, let channel) = link { channel.flush() }
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
            if case .open(_, let channel) = link { channel.flush() }
        }
    }

    /// Link `n` closed: lost, unless it was closed on purpose (`close`, or a fatal error that
    /// already reported it). The host goes idle until the next link.
    private func closed(_ n: Int, _ error: (any Error)?) {
        guard link.number == n else { return }
        let lost: Bool
        if case .open = link { lost = true } else { lost = false }
        link = .idle
        channelPump.closeAll()
        reading = false
        flushScheduled = false
        runHost?({ h, _ in h.idle(); return [] })
        guard lost else { return }
        onEvent?(.lost(reason: "lost the controller at \(spec)" + (error.map { ": \(Self.describe($0))" } ?? "")))
    }

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
