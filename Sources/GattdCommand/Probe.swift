import ArgumentParser
import GattBlueZ
import GattCore
import GattDaemon
import GattTransport
import Logging
import NIOCore
import NIOPosix

/// `gattd --probe --transport SPEC`: what the controller is and can do, then exit (0; 69 when
/// it cannot be reached, 77 without the capabilities, 64 for a bad --transport). The first
/// thing to run on new hardware.
func runProbe(_ options: Gattd) throws {
    let (probe, location) = try probeController(options)
    StandardStream.output.write(ProbeReport.render(probe, location: location))
}

/// `gattd --check-config FILE --probe --transport SPEC`: after the config's own rules, its
/// advertising sets against what that controller takes, each violation naming the set's path
/// and the bytes as gattd would report them at start (exit 65 when one does not fit).
func checkConfigAgainstController(_ path: String, _ options: Gattd) throws {
    guard case .success(let (configuration, payloads)) = loadConfig(path) else { return }
    let (probe, location) = try probeController(options)
    StandardStream.output.write("\n" + ProbeReport.render(probe, location: location))
    guard let controller = probe.controller else { return }
    let sets = [AdvertisingSet.primary(payloads)]
        + configuration.gatt.advertisingSets.compactMap { try? $0.build() }
    let violations = controller.limits.violations(of: sets)
    guard !violations.isEmpty else {
        let turns = sets.count > 1 && controller.limits.setsTakeTurns ? " (taking turns on the air)" : ""
        StandardStream.output.write("\(path): the \(sets.count) advertising set\(sets.count == 1 ? "" : "s") fit this controller\(turns)\n")
        return
    }
    for v in violations { StandardStream.error.write("\(path): \(v)\n") }
    StandardStream.error.write("\(path): \(violations.count) advertising set error\(violations.count == 1 ? "" : "s") with this controller\n")
    throw ExitCode(CheckConfig.dataError)
}

/// Probes the controller `--transport` names; failures print and exit as `--probe` documents.
func probeController(_ options: Gattd) throws -> (ControllerProbe, location: String) {
    let logger = bootstrapLogging(options.logLevel)
    let spec: TransportSpec
    do {
        let (chosen, reason) = try chooseTransport(options.transport)
        spec = chosen
        if let reason { StandardStream.error.write("gattd: no --transport: \(reason)\n") }
    } catch {
        StandardStream.error.write("gattd: --transport: \(error)\n")
        throw ExitCode(64)
    }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    if case .bluez(let index) = spec {
        do {
            return (try BlueZProbe.probe(index, eventLoop: group.next(), timeout: .seconds(15)).wait(), "\(spec)")
        } catch {
            StandardStream.error.write("gattd: probing \(spec): \(error)\n")
            throw ExitCode(69)
        }
    }
    // Nothing of the config matters to a probe: the controller is only read.
    let transport = makeTransport(spec, eventLoop: group.next(), configuration: GattConfiguration(name: "gattd"), logger: logger)
    do {
        return (try transport.probe(timeout: .seconds(15)).wait(), "\(spec)")
    } catch {
        let failure = error as? ControllerProbeFailure ?? ControllerProbeFailure("\(error)")
        StandardStream.error.write("gattd: probing \(spec): \(failure)\n")
        throw ExitCode(failure.exitCode)
    }
}
