import Dispatch
import GattControlProtocol
import Glibc
import Logging
import NIOCore
import NIOPosix

/// One central's console session: its program on a pty, its own control connection (so a
/// central that reads slowly holds up only its own notifications) and its `ConsoleOutflow`.
/// What the central writes goes to the pty; what the program prints is notified to that
/// central only. A disconnect hangs the session up (SIGHUP to the program's process group,
/// and the pty closes); the program ending ends the session once its output is sent, and
/// disconnects nothing. Confined to the event loop.
final class ConsoleSession {
    enum Phase {
        /// The pty and the connection are being set up.
        case starting
        case running
        /// The program closed its terminal (exited): its last output is being sent.
        case draining
        case ended
    }

    let central: String
    let options: UARTConsoleOptions
    let eventLoop: any EventLoop
    let logger: Logger
    private(set) var phase = Phase.starting
    private var outflow: ConsoleOutflow
    private var terminal: PseudoTerminal?
    private var pty: (any Channel)?
    private var connection: ControlConnection?
    /// What the central wrote while the session was starting: written to the pty first.
    private var early: [UInt8] = []
    /// The program has exited and was reaped: its process id may be reused, so no signal goes to it.
    private var reaped = false
    /// Called once when the session has ended.
    var onEnd: (() -> Void)?

    init(central: String, mtu: Int, options: UARTConsoleOptions, eventLoop: any EventLoop, logger: Logger) {
        self.central = central
        self.options = options
        self.eventLoop = eventLoop
        self.logger = logger
        self.outflow = ConsoleOutflow(mtu: mtu)
    }

    /// Runs the program and opens the session's control connection (`connect`: a socket to
    /// gattd's control server). Nil, or why no session could start.
    func start(connect: () -> EventLoopFuture<CInt>) -> String? {
        let environment = PseudoTerminal.environment(["TERM=\(options.term)", "GATTD_CENTRAL=\(central)"])
        let terminal: PseudoTerminal
        switch PseudoTerminal.spawn(options.command, environment: environment) {
        case .failure(let f): return "\(f)"
        case .success(let t): terminal = t
        }
        self.terminal = terminal
        logger.info("console: session for \(central): \(options.command.joined(separator: " ")) (pid \(terminal.pid))")
        reap(terminal.pid)
        let ptyFuture = NIOPipeBootstrap(group: eventLoop)
            .channelOption(.autoRead, value: false)  // read once the session is wired (`pump`)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ConsolePtyHandler()) }
            }
            .takingOwnershipOfDescriptor(inputOutput: terminal.master)
        let connectionFuture = connect().flatMap { ControlConnection.open(socket: $0, on: self.eventLoop) }
        ptyFuture.and(connectionFuture).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success((let channel, let connection)):
                self.connection = connection
                connection.onClose = { [weak self] in self?.end("gattd closed its control connection") }
                guard phase == .starting else {
                    channel.close(promise: nil)
                    connection.close()
                    return
                }
                pty = channel
                (try? channel.pipeline.syncOperations.handler(type: ConsolePtyHandler.self))?.session = self
                phase = .running
                let first = early
                early = []
                if !first.isEmpty { typed(first) }
                pump()
            case .failure(let error):
                ptyFuture.whenSuccess { $0.close(promise: nil) }
                connectionFuture.whenSuccess { $0.close() }
                end("cannot set up the session: \(error)")
            }
        }
        return nil
    }

    // MARK: - Events

    /// The central wrote to RX.
    func typed(_ bytes: [UInt8]) {
        if phase == .starting {
            early += bytes
            if early.count > options.maxPendingInput {
                end("the central wrote more than max_pending_input (\(options.maxPendingInput)) bytes before the session started")
            }
            return
        }
        guard phase == .running, let pty else { return }
        var buffer = pty.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        pty.writeAndFlush(buffer, promise: nil)
        let waiting = (try? pty.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if waiting > options.maxPendingInput {
            end("the program has not read \(waiting) bytes the central wrote (max_pending_input \(options.maxPendingInput))")
        }
    }

    func subscriptionChanged(_ on: Bool) {
        outflow.subscriptionChanged(on)
        pump()
    }

    func mtuChanged(_ mtu: Int) { outflow.mtuChanged(mtu) }

    /// The central disconnected: hang up.
    func hangUp() { end(nil) }

    fileprivate func printed(_ buffer: ByteBuffer) {
        outflow.printed(buffer.readableBytesView)
        pump()
    }

    /// The pty closed: every process holding the terminal is gone (or the session ended).
    fileprivate func terminalClosed() {
        pty = nil
        guard phase == .running else { return }
        phase = .draining
        pump()
    }

    // MARK: - Sending

    private func pump() {
        if phase == .draining, outflow.isDrained {
            end(nil, reason: "the program ended")
            return
        }
        pty?.setOption(.autoRead, value: outflow.readsProgram).whenFailure { _ in }
        guard phase == .running || phase == .draining, let connection, let chunk = outflow.next() else { return }
        let command = ControlCommand.notify(characteristic: options.txID, value: ControlValue(hex: chunk), central: central, wait: true)
        connection.request(command).assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(.sent(let n)):
                outflow.completed(delivered: n > 0)
                pump()
            case .success(.failure(let e)) where e.code == .unknownCentral:
                end(nil, reason: "the central left")
            case .success(let other):
                end("notify answered \(other)")
            case .failure:
                end("gattd closed its control connection")
            }
        }
    }

    // MARK: - Ending

    /// Ends the session: SIGHUP to the program's process group, the pty and connection closed.
    /// `problem`: logged as a warning.
    func end(_ problem: String?, reason: String = "the central disconnected") {
        guard phase != .ended else { return }
        phase = .ended
        if let problem {
            logger.warning("console: session for \(central) ended: \(problem)")
        } else {
            logger.info("console: session for \(central) ended: \(reason)")
        }
        if let terminal, !reaped {
            kill(-terminal.pid, SIGHUP)
            // A program that ignores the hang-up (nohup, trap '' HUP) is killed after 5 s.
            eventLoop.scheduleTask(in: .seconds(5)) { [self] in
                guard !reaped else { return }
                logger.warning("console: the program of \(central)'s session (pid \(terminal.pid)) ignored SIGHUP; killing its process group")
                kill(-terminal.pid, SIGKILL)
            }
        }
        pty?.close(promise: nil)
        pty = nil
        connection?.onClose = nil
        connection?.close()
        connection = nil
        let done = onEnd
        onEnd = nil
        done?()
    }

    /// Waits for the program to exit (a blocking waitpid off the loop) and logs how it ended.
    private func reap(_ pid: pid_t) {
        let logger = logger
        let central = central
        // A serial queue of its own: libdispatch gives it a thread beyond the global pool's, so
        // sessions' blocked waits never starve the pool (ChildProcess uses it too).
        DispatchQueue(label: "gattd.console.reap").async {
            var status: CInt = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            let exited = status & 0x7F == 0
            let how = exited ? "exited with status \((status >> 8) & 0xFF)" : "was killed by signal \(status & 0x7F)"
            self.eventLoop.execute {
                self.reaped = true
                logger.info("console: the program of \(central)'s session (pid \(pid)) \(how)")
            }
        }
    }
}

/// What the program prints, to its session; the pty's end, to it.
private final class ConsolePtyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    weak var session: ConsoleSession?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        session?.printed(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        session?.terminalClosed()
        context.fireChannelInactive()
    }

    /// EIO: the last process holding the terminal closed it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension ConsolePtyHandler: Sendable {}
extension ConsoleSession: @unchecked Sendable {}
