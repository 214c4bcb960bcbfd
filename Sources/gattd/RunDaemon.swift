import ArgumentParser
import Dispatch
import Foundation
import GattCore
import GattDaemon
import GattTransport
import Logging
import NIOPosix

/// Runs the daemon with the parsed options until SIGINT/SIGTERM; SIGHUP reloads the config.
func runDaemon(_ options: Gattd) throws {
    let level = options.logLevel
    let format = JournalLogHandler.Format.detect()
    LoggingSystem.bootstrap { label in
        var h = JournalLogHandler(label: label, format: format)
        h.logLevel = level
        return h
    }
    let logger = Logger(label: "gattd")
    func fail(_ message: String, _ code: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("gattd: \(message)\n".utf8))
        return ExitCode(code)
    }

    let configuration: GattConfiguration
    let payloads: AdvertisingPayloads
    switch loadConfig(options.config) {
    case .success(let loaded): (configuration, payloads) = loaded
    case .failure(let lines):
        for l in lines { FileHandle.standardError.write(Data("\(l)\n".utf8)) }
        throw ExitCode(65)
    }
    let spec: TransportSpec
    do {
        spec = try TransportSpec(parsing: options.transport)
    } catch {
        throw fail("--transport: \(error)", 64)
    }
    if case .kernel(let index) = spec {
        // Kernel transport (hciN, kernel:hciN; edit by the kernel-transport helper):
        // Sources/GattDaemon/Kernel/KernelDaemonMain.swift runs KernelPeripheralDaemon with the
        // same control socket, SIGINT/SIGTERM and SIGHUP handling as the H4 path below.
        do {
            try KernelDaemonMain.run(
                index: index, configuration: configuration, payloads: payloads, requestTimeout: options.requestTimeout,
                stateDirectory: options.stateDir, controlPath: options.control, controlGroup: options.controlGroup, logger: logger,
                reload: { loadConfig(options.config).mapError { KernelDaemonMain.ConfigErrors(lines: $0.lines) } })
        } catch {
            throw fail(error.message, error.exitCode)
        }
    }
    guard options.requestTimeout > 0, options.requestTimeout <= 3600 else {
        throw fail("--request-timeout must be between 0 and 3600 seconds", 64)
    }

    var daemonOptions = PeripheralDaemon.Options()
    daemonOptions.requestTimeout = .milliseconds(Int64(options.requestTimeout * 1000))
    daemonOptions.stateDirectory = options.stateDir

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, spec: spec, group: group, logger: logger, options: daemonOptions)
    var controlOptions = ControlServer.Options(path: options.control)
    controlOptions.group = options.controlGroup
    let control = ControlServer(peripheral: daemon, eventLoop: daemon.eventLoop, options: controlOptions, logger: logger)
    do {
        try control.start().wait()
    } catch {
        try? group.syncShutdownGracefully()
        throw fail("control socket: \(error)", 1)
    }
    daemon.start()

    // SIGINT/SIGTERM: stop advertising, disconnect politely, exit 0. SIGHUP: reload.
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
        logger.info("received SIGHUP, reloading \(options.config)")
        switch loadConfig(options.config) {
        case .success(let (c, p)):
            _ = daemon.reload(configuration: c, payloads: p)
        case .failure(let lines):
            for l in lines { logger.error("\(l)") }
            logger.error("config reload rejected (\(lines.count) error\(lines.count == 1 ? "" : "s")); still serving the previous config")
        }
    }
    hup.resume()
    sources.append(hup)
    withExtendedLifetime(sources) { dispatchMain() }
}

/// Loads and validates a config and builds its advertising payloads; the
/// failure is the error lines to print ("path: where: what").
func loadConfig(_ path: String) -> Result<(GattConfiguration, AdvertisingPayloads), ConfigLoadFailure> {
    let configuration: GattConfiguration
    do {
        configuration = try ConfigLoader.load(path: path)
    } catch {
        return .failure(ConfigLoadFailure(lines: error.errors.map { "\(path): \($0)" }))
    }
    do {
        return .success((configuration, try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)))
    } catch {
        return .failure(ConfigLoadFailure(lines: ["\(path): \(error)"]))
    }
}

struct ConfigLoadFailure: Error, Sequence {
    var lines: [String]
    var count: Int { lines.count }
    func makeIterator() -> IndexingIterator<[String]> { lines.makeIterator() }
}
