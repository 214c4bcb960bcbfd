import ArgumentParser
import Foundation
import GattCore
import GattDaemon
import GattTransport
import Logging

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
    case .failure(let failure):
        for l in failure.lines { FileHandle.standardError.write(Data("\(l)\n".utf8)) }
        throw ExitCode(65)
    }
    let spec: TransportSpec
    do {
        spec = try TransportSpec(parsing: options.transport)
    } catch {
        throw fail("--transport: \(error)", 64)
    }

    if case .kernel = spec, configuration.advertising.ownAddressType == .random {
        // The kernel owns the adapter's addresses and routes the ATT channel by them.
        throw fail(
            "\(options.config): advertising.own_address_type: \"random\" is not supported with the kernel transport (\(spec)); "
                + "give the adapter a static random address with `btmgmt -i hciN static-addr ADDR`, or use an H4 transport (user:, serial:, tcp:, unix:)",
            64)
    }

    var control = ControlServer.Options(path: options.control)
    control.group = options.controlGroup
    control.maximumClients = max(1, options.maxControlClients)
    let kernelIndex: Int? = if case .kernel(let index) = spec { index } else { nil }
    let runner = DaemonRunner(
        requestTimeout: options.requestTimeout, stateDirectory: options.stateDir, control: control, logger: logger,
        // The kernel transport's SIGHUP line has always said "the config".
        configName: kernelIndex == nil ? options.config : "the config",
        loadConfig: { loadConfig(options.config) })
    do {
        if let kernelIndex {
            // Kernel transport (hciN, kernel:hciN): the kernel runs the controller, gattd serves ATT.
            try runner.run { group, daemonOptions in
                KernelPeripheralDaemon(
                    configuration: configuration, payloads: payloads, index: kernelIndex, group: group, logger: logger, options: daemonOptions)
            }
        } else {
            try runner.run { group, daemonOptions in
                PeripheralDaemon(configuration: configuration, payloads: payloads, spec: spec, group: group, logger: logger, options: daemonOptions)
            }
        }
    } catch {
        throw fail(error.message, error.exitCode)
    }
}

/// Loads and validates a config and builds its advertising payloads; the
/// failure is the error lines to print ("path: where: what").
func loadConfig(_ path: String) -> Result<(GattConfiguration, AdvertisingPayloads), DaemonRunner.ConfigErrors> {
    let configuration: GattConfiguration
    do {
        configuration = try ConfigLoader.load(path: path)
    } catch {
        return .failure(DaemonRunner.ConfigErrors(lines: error.errors.map { "\(path): \($0)" }))
    }
    do {
        return .success((configuration, try AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.name)))
    } catch {
        return .failure(DaemonRunner.ConfigErrors(lines: ["\(path): \(error)"]))
    }
}
