import Logging
import NIOCore

/// Runs the agents of a config's profile instances (`ProfileCatalog.instances(inConfig:)`)
/// while gattd runs. Each agent drives the daemon only through its own control connections:
/// `connect` gives a socket to gattd's control server (`ControlServer.connectLocalClient`).
/// Everything runs on `eventLoop`, the daemon's.
public final class ProfileRunner: @unchecked Sendable {
    let eventLoop: any EventLoop
    let connect: () -> EventLoopFuture<CInt>
    let logger: Logger
    private var agents: [any ProfileAgent] = []

    public init(eventLoop: any EventLoop, logger: Logger, connect: @escaping () -> EventLoopFuture<CInt>) {
        self.eventLoop = eventLoop
        self.connect = connect
        self.logger = logger
    }

    /// Starts the agents of `instances` (after stopping those running: a reload).
    public func run(_ instances: [ProfileInstance]) {
        eventLoop.execute { [self] in
            agents.forEach { $0.stop() }
            agents = instances.compactMap(agent)
            agents.forEach { $0.start() }
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        eventLoop.submit { [self] in
            agents.forEach { $0.stop() }
            agents = []
        }
    }

    private func agent(_ instance: ProfileInstance) -> (any ProfileAgent)? {
        switch instance.options {
        case .uartConsole(let o): ConsoleAgent(options: o, eventLoop: eventLoop, connect: connect, logger: logger)
        case .improvWiFi(let o): ImprovAgent(options: o, eventLoop: eventLoop, connect: connect, logger: logger)
        case .battery(let o): BatteryAgent(options: o, eventLoop: eventLoop, connect: connect, logger: logger)
        case .deviceInformation: nil  // values only
        }
    }
}
