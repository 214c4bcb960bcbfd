import GattControlProtocol
import GattCore
import Logging
import NIOCore

/// Runs one `uart_console` service: watches the control socket's events and gives each
/// central that subscribes to TX (and meets the entry's `security`) a `ConsoleSession`, up to
/// `max_sessions`. Confined to the event loop.
final class ConsoleAgent: ProfileAgent {
    let options: UARTConsoleOptions
    let eventLoop: any EventLoop
    let connect: () -> EventLoopFuture<CInt>
    let logger: Logger
    fileprivate var connection: ControlConnection?
    private var sessions: [String: ConsoleSession] = [:]
    /// Centrals whose admission (security check) is under way, with what they wrote meanwhile
    /// (a phone writes as soon as its subscription is answered): the session gets it first.
    private var admitting: [String: [UInt8]] = [:]
    /// The ATT_MTU of each connected central, as `mtu` events said.
    private var mtus: [String: Int] = [:]
    private var stopped = false

    init(options: UARTConsoleOptions, eventLoop: any EventLoop, connect: @escaping () -> EventLoopFuture<CInt>, logger: Logger) {
        self.options = options
        self.eventLoop = eventLoop
        self.connect = connect
        self.logger = logger
    }

    func start() {
        ControlConnection.open(connect, on: eventLoop, logger: logger, what: "console") { [self] c in
            guard !stopped else { return c.close() }
            connection = c
            c.onEvent = { [weak self] in self?.handle($0) }
            c.onClose = { [weak self] in
                guard let self, !self.stopped else { return }
                self.logger.error("console: lost its control connection; sessions end, and none starts until gattd restarts or reloads")
                self.stop()
            }
            _ = c.request(.watch(requests: nil))
            // Centrals subscribed before the agent ran (a restart of gattd restores
            // bonded centrals' subscriptions): give them sessions too.
            c.request(.status).assumeIsolated().whenSuccess { [self] reply in
                guard case .status(let s) = reply else { return }
                for central in s.connections {
                    let name = central.address.description
                    mtus[name] = central.mtu
                    if central.subscriptions.contains(where: { $0.characteristic == options.txID && $0.notify }) { admit(name) }
                }
            }
        }
    }

    func stop() {
        stopped = true
        for s in sessions.values { s.end(nil, reason: "gattd is stopping or reloading") }
        sessions = [:]
        connection?.close()
        connection = nil
    }

    private func handle(_ event: ControlEvent) {
        switch event {
        case .subscription(let central, let characteristic, let notify, _) where characteristic == options.txID:
            if let s = sessions[central] {
                s.subscriptionChanged(notify)
            } else if notify {
                admit(central)
            }
        case .written(let central, let characteristic, let value) where characteristic == options.rxID:
            if let s = sessions[central] {
                s.typed(value.bytes)
            } else if let early = admitting[central] {
                if early.count + value.bytes.count <= options.maxPendingInput {
                    admitting[central] = early + value.bytes
                } else {
                    // Dropping only this write would leave a hole in the input: no session at all.
                    admitting[central] = nil
                    logger.warning("console: \(central) wrote more than max_pending_input (\(options.maxPendingInput)) bytes before its session started; no session (turn TX off and on for one)")
                }
            } else {
                logger.info("console: \(central) wrote \(value.bytes.count) bytes to \(options.rxID) without a session (it has not subscribed to \(options.txID)); dropped")
            }
        case .mtu(let central, let mtu):
            mtus[central] = mtu
            sessions[central]?.mtuChanged(mtu)
        case .disconnected(let central, _):
            mtus[central] = nil
            admitting[central] = nil
            sessions.removeValue(forKey: central)?.hangUp()
        default:
            break
        }
    }

    /// Checks the central's security (`status`, and `bonds` for `authenticated`), then starts
    /// its session; a refusal is logged and told to the central on TX.
    private func admit(_ central: String) {
        guard let connection, admitting[central] == nil, sessions[central] == nil else { return }
        admitting[central] = []
        connection.request(.status).and(connection.request(.bonds)).assumeIsolated().whenComplete { [self] result in
            guard let early = admitting.removeValue(forKey: central), !stopped else { return }
            guard case .success((.status(let status), let bondsReply)) = result,
                let link = status.connections.first(where: { $0.address.description == central })
            else { return }  // gone meanwhile
            var bonds: [ControlBond] = []
            if case .bonds(let b) = bondsReply { bonds = b }
            if let refusal = ConsoleAdmission.refusal(
                security: options.security, link: link.security, bonded: bonds.contains { $0.central == (link.identity ?? link.address) },
                sessions: sessions.count, maxSessions: options.maxSessions)
            {
                logger.warning("console: no session for \(central): \(refusal)")
                tell(central, "gattd: no console: \(refusal)\r\n", mtu: mtus[central] ?? link.mtu)
                return
            }
            let session = ConsoleSession(central: central, mtu: mtus[central] ?? link.mtu, options: options, eventLoop: eventLoop, logger: logger)
            sessions[central] = session
            session.onEnd = { [weak self, weak session] in
                guard let self, let session, self.sessions[central] === session else { return }
                self.sessions[central] = nil
            }
            if let failure = session.start(connect: connect) {
                sessions[central] = nil
                logger.error("console: no session for \(central): \(failure)")
                tell(central, "gattd: no console: \(failure)\r\n", mtu: mtus[central] ?? link.mtu)
            } else if !early.isEmpty {
                session.typed(early)
            }
        }
    }
}

extension ConsoleAgent {
    /// Notifies `text` to the central on TX, in ATT_MTU - 3 chunks, in order.
    fileprivate func tell(_ central: String, _ text: String, mtu: Int) {
        guard let connection else { return }
        let bytes = Array(text.utf8)
        let size = ConsoleOutflow.chunkSize(mtu: mtu)
        for start in stride(from: 0, to: bytes.count, by: size) {
            let chunk = Array(bytes[start..<min(start + size, bytes.count)])
            _ = connection.request(.notify(characteristic: options.txID, value: ControlValue(hex: chunk), central: central, wait: true))
        }
    }
}

/// Who gets a console session (the rules, apart from the I/O).
enum ConsoleAdmission {
    /// Nil when a central on a link of security `link` (bonded or not) may have a session
    /// while `sessions` run; else why not.
    static func refusal(security: UARTConsoleOptions.Security, link: SecurityLevel, bonded: Bool, sessions: Int, maxSessions: Int) -> String? {
        switch security {
        case .authenticated where !link.isAuthenticated:
            return "the link is not authenticated (the console needs pairing with MITM protection: \"security\": \"authenticated\")"
        case .authenticated where !bonded:
            return "the central is not bonded (the console needs a bond: \"security\": \"authenticated\")"
        case .encrypted where !link.isEncrypted:
            return "the link is not encrypted (\"security\": \"encrypted\")"
        default:
            break
        }
        if sessions >= maxSessions { return "\(maxSessions) sessions are running (max_sessions)" }
        return nil
    }
}
