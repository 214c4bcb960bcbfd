import ArgumentParser
import Dispatch
import Foundation
import GattCore
import GattDaemon
import GattTransport
import Logging
import NIOPosix

/// Runs the daemon with the parsed options until SIGINT/SIGTERM.
func runDaemon(_ options: Gattd) throws {
    let level = options.logLevel
    LoggingSystem.bootstrap { label in
        var h = StreamLogHandler.standardError(label: label)
        h.logLevel = level
        return h
    }
    let logger = Logger(label: "gattd")
    func fail(_ message: String, _ code: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("gattd: \(message)\n".utf8))
        return ExitCode(code)
    }

    let configuration: GattConfiguration
    do {
        configuration = try ConfigLoader.load(path: options.config)
    } catch {
        for e in error.errors { FileHandle.standardError.write(Data("\(options.config): \(e)\n".utf8)) }
        throw ExitCode(65)
    }
    let payloads: AdvertisingPayloads
    do {
        payloads = try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)
    } catch {
        throw fail("\(options.config): \(error)", 65)
    }
    let spec: TransportSpec
    do {
        spec = try TransportSpec(parsing: options.transport)
    } catch {
        throw fail("--transport: \(error)", 64)
    }
    guard spec.isH4 else {
        throw fail("the kernel transport (\(spec)) is not available yet; use an H4 transport (tcp:, unix:, serial:, user:)", 1)
    }

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let daemon = PeripheralDaemon(configuration: configuration, payloads: payloads, spec: spec, group: group, logger: logger)
    daemon.start()

    // SIGINT/SIGTERM: stop advertising, disconnect politely, exit 0.
    let signalQueue = DispatchQueue(label: "gattd.signals")
    var sources: [any DispatchSourceSignal] = []
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
        source.setEventHandler {
            logger.info("received \(sig == SIGINT ? "SIGINT" : "SIGTERM"), shutting down")
            daemon.stop().whenComplete { _ in
                signalQueue.async {
                    try? group.syncShutdownGracefully()
                    exit(0)
                }
            }
        }
        source.resume()
        sources.append(source)
    }
    withExtendedLifetime(sources) { dispatchMain() }
}
