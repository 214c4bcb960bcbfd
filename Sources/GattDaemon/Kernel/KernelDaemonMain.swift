import Dispatch
import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// `gattd --transport hciN` (or `kernel:hciN`): runs ``KernelPeripheralDaemon`` the way
/// gattd's `runDaemon` runs the H4 daemon: the control socket, SIGINT/SIGTERM (stop
/// advertising, disconnect politely, exit 0) and SIGHUP (reload the config).
public enum KernelDaemonMain {
    /// A start-up failure: the message for stderr and the exit status.
    public struct Failure: Error, Sendable {
        public var message: String
        public var exitCode: Int32
        public init(_ message: String, exitCode: Int32) {
            self.message = message
            self.exitCode = exitCode
        }
    }

    /// A config that cannot be reloaded: the error lines to log.
    public struct ConfigErrors: Error, Sendable {
        public var lines: [String]
        public init(lines: [String]) { self.lines = lines }
    }

    /// Starts and serves until a signal ends the process; returns only by throwing.
    /// Exit statuses: 64 bad `requestTimeout`; 1 control socket; 69 (EX_UNAVAILABLE) bluetoothd
    /// running or no Bluetooth in the kernel; 77 (EX_NOPERM) missing capabilities.
    public static func run(
        index: Int, configuration: GattConfiguration, payloads: AdvertisingPayloads, requestTimeout: Double,
        stateDirectory: String?, controlPath: String, controlGroup: String?, logger: Logger,
        reload: @escaping @Sendable () -> Result<(GattConfiguration, AdvertisingPayloads), ConfigErrors>
    ) throws(Failure) {
        guard requestTimeout > 0, requestTimeout <= 3600 else {
            throw Failure("--request-timeout must be between 0 and 3600 seconds", exitCode: 64)
        }
        var options = PeripheralDaemon.Options()
        options.requestTimeout = .milliseconds(Int64(requestTimeout * 1000))
        options.stateDirectory = stateDirectory

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let daemon = KernelPeripheralDaemon(
            configuration: configuration, payloads: payloads, index: index, group: group, logger: logger, options: options)
        var controlOptions = ControlServer.Options(path: controlPath)
        controlOptions.group = controlGroup
        let control = ControlServer(peripheral: daemon, eventLoop: daemon.eventLoop, options: controlOptions, logger: logger)
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
            let kind = (error as? KernelTransportError)?.kind
            throw Failure("\(error)", exitCode: kind == .permissionDenied ? 77 : 69)
        }

        let signalQueue = DispatchQueue(label: "gattd.signals")
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
            source.setEventHandler {
                logger.info("received \(sig == SIGINT ? "SIGINT" : "SIGTERM"), shutting down")
                control.stop().flatMap { daemon.stop() }.whenComplete { _ in
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
        hup.setEventHandler {
            logger.info("received SIGHUP, reloading the config")
            switch reload() {
            case .success(let (c, p)):
                _ = daemon.reload(configuration: c, payloads: p)
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
