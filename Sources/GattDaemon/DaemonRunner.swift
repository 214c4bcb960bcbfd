import Dispatch
import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs a ``PeripheralDaemon`` as gattd does, whatever the transport: the control
/// socket, SIGINT/SIGTERM (stop advertising, disconnect politely, exit 0), SIGHUP (reload
/// the config) and systemd notifications (through ``DaemonOptions/notifier``).
public struct DaemonRunner {
    /// A start-up failure: the message for stderr and the exit status.
    public struct Failure: Error, Sendable {
        public var message: String
        public var exitCode: Int32
        public init(_ message: String, exitCode: Int32) {
            self.message = message
            self.exitCode = exitCode
        }
    }

    /// A config that cannot be loaded: the error lines ("path: where: what").
    public struct ConfigErrors: Error, Sendable {
        public var lines: [String]
        public init(lines: [String]) { self.lines = lines }
    }

    public typealias ConfigLoading = @Sendable () -> Result<(DaemonConfiguration, AdvertisingPayloads), ConfigErrors>

    /// `--request-timeout`, in seconds.
    public var requestTimeout: Double
    /// `--state-dir`.
    public var stateDirectory: String?
    public var control: ControlServer.Options
    public var logger: Logger
    /// What SIGHUP reloads, as the log line names it ("received SIGHUP, reloading \(…)").
    public var configName: String
    /// Loads the config again (SIGHUP).
    public var loadConfig: ConfigLoading
    /// Where the controller is, as `--transport` named it (for the systemd status).
    public var controllerLocation: String?
    /// False with `--no-state-restoration`: runtime services and advertising choices are
    /// not kept (the config's `state_restoration` can turn it off too).
    public var restoresState = true
    /// Expands profile entries in `add_service` and restored runtime services.
    public var serviceExpander: (any ServiceExpander)?
    /// Runs beside the daemon as a control client (the profiles' agents).
    public var companion: (any DaemonCompanion)?

    public init(
        requestTimeout: Double, stateDirectory: String?, control: ControlServer.Options, logger: Logger, configName: String,
        loadConfig: @escaping ConfigLoading
    ) {
        self.requestTimeout = requestTimeout
        self.stateDirectory = stateDirectory
        self.control = control
        self.logger = logger
        self.configName = configName
        self.loadConfig = loadConfig
    }

    /// Makes the transport with `makeTransport` (on one event loop) and the daemon around it,
    /// starts them and serves until a signal ends the process; returns only by throwing.
    /// Exit statuses: 64 bad `requestTimeout` or a config the transport refuses; 1 control
    /// socket; when the transport cannot be opened for good, the status it names (77 missing
    /// capabilities, 69 bluetoothd running or no Bluetooth in the kernel).
    public func run(
        configuration: DaemonConfiguration, payloads: AdvertisingPayloads, makeTransport: (any EventLoop) -> any PeripheralTransport
    ) throws(Failure) -> Never {
        guard requestTimeout > 0, requestTimeout <= 3600 else {
            throw Failure("--request-timeout must be between 0 and 3600 seconds", exitCode: 64)
        }
        var options = DaemonOptions()
        options.requestTimeout = .milliseconds(Int64(requestTimeout * 1000))
        options.stateDirectory = stateDirectory
        options.controllerLocation = controllerLocation
        options.configName = configName
        options.restoresState = restoresState
        options.serviceExpander = serviceExpander
        let companion = self.companion

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let transport = makeTransport(group.next())
        if let refusal = transport.refusal(of: configuration.gatt) {
            try? group.syncShutdownGracefully()
            throw Failure("\(configName): \(refusal)", exitCode: 64)
        }
        let daemon = PeripheralDaemon(
            configuration: configuration.gatt, settings: configuration.settings, payloads: payloads, transport: transport, logger: logger, options: options)
        let control = ControlServer(peripheral: daemon, eventLoop: daemon.eventLoop, options: self.control, logger: logger)
        // The first controller cannot serve the config (its advertising sets do not fit): stop
        // as for an invalid config.
        let fatalLogger = logger
        daemon.onFatalError = { failure in
            fatalLogger.critical("\(failure.message)")
            (companion?.stop(on: daemon.eventLoop) ?? daemon.eventLoop.makeSucceededVoidFuture()).flatMap { control.stop() }.flatMap { daemon.stop() }.whenComplete { _ in
                DispatchQueue.global().async {
                    try? group.syncShutdownGracefully()
                    exit(failure.exitCode)
                }
            }
        }
        do {
            try control.start().wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw Failure("control socket: \(error)", exitCode: 1)
        }
        do {
            try daemon.start().wait()
        } catch {
            _ = try? control.stop().wait()
            _ = try? daemon.stop().wait()
            try? group.syncShutdownGracefully()
            var code: Int32 = 69
            if let f = error as? TransportOpenFailure, case .never(let c) = f.retry { code = c }
            throw Failure("\(error)", exitCode: code)
        }
        companion?.start(control: control)

        let logger = self.logger
        let signalQueue = DispatchQueue(label: "gattd.signals")
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            source.setEventHandler {
                logger.info("received \(sig == SIGINT ? "SIGINT" : "SIGTERM"), shutting down")
                (companion?.stop(on: daemon.eventLoop) ?? daemon.eventLoop.makeSucceededVoidFuture()).flatMap { control.stop() }.flatMap { daemon.stop() }.whenComplete { _ in
                    signalQueue.async {
                        try? group.syncShutdownGracefully()
                        exit(0)
                    }
                }
            }
            source.resume()
            sources.append(source)
        }
        signal(SIGHUP, SIG_IGN)
        let hup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: signalQueue)
        let configName = self.configName
        let loadConfig = self.loadConfig
        hup.setEventHandler {
            logger.info("received SIGHUP, reloading \(configName)")
            switch loadConfig() {
            case .success(let (c, p)):
                daemon.reload(configuration: c.gatt, settings: c.settings, payloads: p).whenComplete { result in
                    switch result {
                    case .success: companion?.reload()
                    case .failure(let error):
                        logger.error("\(configName): \(error)")
                        logger.error("config reload rejected (1 error); still serving the previous config")
                    }
                }
            case .failure(let errors):
                for l in errors.lines { logger.error("\(l)") }
                logger.error("config reload rejected (\(errors.lines.count) error\(errors.lines.count == 1 ? "" : "s")); still serving the previous config")
            }
        }
        hup.resume()
        sources.append(hup)
        withExtendedLifetime(sources) { dispatchMain() }
    }
}
