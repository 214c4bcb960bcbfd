import ArgumentParser
import GattBlueZ
import GattCore
import GattDaemon
import GattTransport
import Logging
import NIOCore

/// Runs the daemon with the parsed options until SIGINT/SIGTERM; SIGHUP reloads the config.
func runDaemon(_ options: Gattd) throws {
    let logger = bootstrapLogging(options.logLevel)
    func fail(_ message: String, _ code: Int32) -> ExitCode {
        StandardStream.error.write("gattd: \(message)\n")
        return ExitCode(code)
    }

    let configuration: DaemonConfiguration
    let payloads: AdvertisingPayloads
    switch loadConfig(options.config) {
    case .success(let loaded): (configuration, payloads) = loaded
    case .failure(let failure):
        // The same report and exit status as --check-config (66 unreadable, 65 invalid).
        let (code, _, err) = CheckConfig.run(path: options.config)
        guard code != 0 else {
            for l in failure.lines { StandardStream.error.write("\(l)\n") }
            throw ExitCode(CheckConfig.dataError)
        }
        StandardStream.error.write(err)
        throw ExitCode(code)
    }
    let spec: TransportSpec
    do {
        let (chosen, reason) = try chooseTransport(options.transport)
        spec = chosen
        if let reason { logger.info("no --transport: \(reason)") }
    } catch {
        throw fail("--transport: \(error)", 64)
    }

    var capture: BtsnoopWriter?
    if let path = options.btsnoop {
        do {
            capture = try BtsnoopWriter(path: path) { logger.warning("\($0)") }
        } catch {
            throw fail("--btsnoop \(path): \(error)", 73)
        }
    }

    var control = ControlServer.Options(path: options.control)
    control.group = options.controlGroup
    control.maximumClients = max(1, options.maxControlClients)
    let profiles = ProfileCompanion(instances: [], logger: logger)
    profiles.loaded(path: options.config, configuration: configuration)
    var runner = DaemonRunner(
        requestTimeout: options.requestTimeout, stateDirectory: options.stateDir, control: control, logger: logger,
        configName: options.config,
        loadConfig: {
            let result = loadConfig(options.config)
            if case .success(let (c, _)) = result { profiles.loaded(path: options.config, configuration: c) }
            return result
        })
    runner.serviceExpander = profileCatalog
    runner.companion = profiles
    runner.controllerLocation = "\(spec)"
    runner.restoresState = !options.noStateRestoration
    do {
        try runner.run(configuration: configuration, payloads: payloads) { eventLoop in
            let transport = makeTransport(spec, eventLoop: eventLoop, configuration: configuration.gatt, logger: logger)
            if let capture, let path = options.btsnoop {
                transport.setCapture(capture)
                logger.info("capturing \(transport.captureScope) to \(path) (btsnoop)")
            }
            return transport
        }
    } catch {
        throw fail(error.message, error.exitCode)
    }
}

/// One line per message on stderr (journald's format under systemd), from `level` up.
func bootstrapLogging(_ level: Logger.Level) -> Logger {
    let format = JournalLogHandler.Format.detect()
    LoggingSystem.bootstrap { label in
        var h = JournalLogHandler(label: label, format: format)
        h.logLevel = level
        return h
    }
    return Logger(label: "gattd")
}

/// The transport `--transport` names: the kernel's stack, bluetoothd (the BlueZ back end), or
/// the H4 host on a link to a controller.
func makeTransport(
    _ spec: TransportSpec, eventLoop: any EventLoop, configuration: GattConfiguration, logger: Logger
) -> any PeripheralTransport & PacketCapturing {
    if case .bluez(let index) = spec {
        // bluetoothd runs the controller, the links, SMP and ATT; gattd registers over D-Bus.
        return BlueZPeripheralTransport(index: index, security: configuration.security, eventLoop: eventLoop, logger: logger)
    }
    if case .kernel(let index) = spec {
        // The kernel runs the controller, the links and SMP; gattd advertises and serves ATT.
        return KernelPeripheralTransport(index: index, eventLoop: eventLoop, configuration: configuration, logger: logger)
    }
    return H4PeripheralTransport(spec: spec, eventLoop: eventLoop, configuration: configuration, logger: logger)
}

/// Loads and validates a config and builds its advertising payloads; the
/// failure is the error lines to print ("path: where: what").
func loadConfig(_ path: String) -> Result<(DaemonConfiguration, AdvertisingPayloads), DaemonRunner.ConfigErrors> {
    let configuration: DaemonConfiguration
    do {
        configuration = try ConfigLoader.load(path: path, expander: profileCatalog)
    } catch {
        return .failure(DaemonRunner.ConfigErrors(lines: error.lines(prefix: "\(path): ")))
    }
    do {
        return .success((configuration, try configuration.gatt.advertisingPayloads()))
    } catch {
        return .failure(DaemonRunner.ConfigErrors(lines: ["\(path): \(error)"]))
    }
}
