import Dispatch
import GattControlProtocol
import GattCore
import Glibc
import Logging
import NIOCore

/// Runs one `improv_wifi` service: reassembles each central's RPC frames, runs the state
/// machine (`ImprovSession`) and does what it says: notifies Current State, Error State and RPC
/// Result, keeps the advertisement's service data 0x4677 in step with the state, asks the Wi-Fi
/// backend, runs Identify. `{"op":"signal","name":"improv.authorize"}` (`gattctl improv
/// authorize`) authorizes. Confined to the event loop.
final class ImprovAgent: ProfileAgent, @unchecked Sendable {
    let options: ImprovWiFiOptions
    let eventLoop: any EventLoop
    let connect: () -> EventLoopFuture<CInt>
    let logger: Logger
    let backend: ImprovWiFiBackend
    private var connection: ControlConnection?
    private var session: ImprovSession
    private var assemblers: [String: ImprovFrameAssembler] = [:]
    private var wake: Scheduled<Void>?
    private var advertisingRefused = false
    /// Characteristics with a notification in flight, and the value to send after it: one
    /// at a time each, the newest winning, so a central writing RPCs without end (Write Without
    /// Response, no pairing) cannot queue notifications without end.
    private var sending: Set<String> = []
    private var latest: [String: [UInt8]] = [:]
    /// An Identify program is running (another Identify meanwhile does nothing).
    private var identifying = false
    private var stopped = false

    init(options: ImprovWiFiOptions, eventLoop: any EventLoop, connect: @escaping () -> EventLoopFuture<CInt>, logger: Logger) {
        self.options = options
        self.eventLoop = eventLoop
        self.connect = connect
        self.logger = logger
        self.backend = ImprovWiFiBackend(wifi: options.wifi, timeout: options.timeout, eventLoop: eventLoop, logger: logger)
        self.session = ImprovSession(capabilities: options.capabilities, authorizationTimeout: options.authorizationTimeout)
    }

    /// The signals that authorize: every Improv service's, or this one's.
    var authorizeSignals: Set<String> { ["improv.authorize", "\(options.serviceID).authorize"] }

    static var now: Duration { .nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds)) }

    func start() {
        ControlConnection.open(connect, on: eventLoop, logger: logger, what: "improv") { [self] c in
            guard !stopped else { return c.close() }
            connection = c
            c.onEvent = { [weak self] in self?.handle($0) }
            c.onClose = { [weak self] in self?.connectionLost() }
            _ = c.request(.watch(requests: nil))
            logger.info("improv: \(session.state == .authorized ? "authorized" : "waiting for authorization (gattctl improv authorize)"), capabilities 0x\(String(options.capabilities.byte, radix: 16))")
            advertise()
        }
    }

    func stop() {
        stopped = true
        wake?.cancel()
        connection?.close()
        connection = nil
    }

    private func connectionLost() {
        guard !stopped else { return }
        connection = nil
        logger.error("improv: lost its control connection; Improv stops until gattd restarts or reloads")
    }

    private func handle(_ event: ControlEvent) {
        switch event {
        case .written(let central, let characteristic, let value) where characteristic == options.rpcCommandID:
            var a = assemblers[central] ?? ImprovFrameAssembler()
            let outputs = a.push(value.bytes)
            // A frame never passes 258 bytes: more gathered without one is garbage.
            if a.buffer.count > 258 { a.reset() }
            assemblers[central] = a
            for o in outputs {
                if case .invalid = o { logger.info("improv: \(central) sent an RPC frame with a bad checksum") }
                perform(session.received(o, now: Self.now))
            }
        case .signal(let name) where authorizeSignals.contains(name):
            logger.info("improv: authorized\(options.authorizationTimeout.map { " for \($0)" } ?? "")")
            perform(session.authorize(now: Self.now))
        case .disconnected(let central, _):
            assemblers[central] = nil
        default:
            break
        }
    }

    private func perform(_ actions: [ImprovSession.Action]) {
        guard !stopped else { return }
        for action in actions {
            switch action {
            case .state(let s):
                notify(options.stateID, [s.rawValue])
                advertise()
            case .error(let e):
                notify(options.errorID, [e.rawValue])
            case .result(var frame):
                if frame.command == ImprovSession.Command.deviceInfo.rawValue { frame = deviceInfo() }
                notify(options.rpcResultID, frame.bytes)
            case .connect(let ssid, let password):
                logger.info("improv: joining the Wi-Fi network \"\(ssid)\"")
                backend.connect(ssid: ssid, password: password).assumeIsolated().whenSuccess { [self] c in
                    let address = c.address ?? ImprovWiFiBackend.hostAddress()
                    logger.info(c.connected ? "improv: joined \"\(ssid)\"\(address.map { " (\($0))" } ?? "")" : "improv: could not join \"\(ssid)\"")
                    perform(session.connectFinished(connected: c.connected, redirectURL: redirectURL(address), now: Self.now))
                }
            case .identify:
                guard let argv = options.identifyCommand, !identifying else { continue }
                identifying = true
                ChildProcess.run(argv, timeout: options.timeout, on: eventLoop).assumeIsolated().whenComplete { [self] result in
                    identifying = false
                    if case .failure(let error) = result { logger.warning("improv: identify: \(error)") }
                }
            case .scan:
                backend.scan().assumeIsolated().whenSuccess { [self] networks in perform(session.scanFinished(networks)) }
            case .wake(let at):
                wake?.cancel()
                let delay = at - Self.now
                wake = eventLoop.scheduleTask(in: .nanoseconds(max(0, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000))) {
                    [weak self] in
                    guard let self else { return }
                    let expired = self.session.authorizationExpired(now: Self.now)
                    if !expired.isEmpty { self.logger.info("improv: the authorization ran out") }
                    self.perform(expired)
                }
            }
        }
    }

    /// `redirect_url` with `{ip}` filled in; nil without one (or without an address for `{ip}`).
    private func redirectURL(_ address: String?) -> String? {
        guard let url = options.redirectURL else { return nil }
        guard url.contains("{ip}") else { return url }
        guard let address else {
            logger.warning("improv: no address for {ip} in redirect_url; the result has no URL")
            return nil
        }
        let host = address.contains(":") ? "[\(address)]" : address
        return url.split(separator: "{ip}", omittingEmptySubsequences: false).joined(separator: host)
    }

    /// Device Info's result: firmware name, firmware version, hardware, device name.
    private func deviceInfo() -> ImprovFrame {
        var u = utsname()
        uname(&u)
        let machine = withUnsafeBytes(of: &u.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        let name = options.deviceName ?? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return .result(ImprovSession.Command.deviceInfo.rawValue, strings: ["gattd", GattdVersion.string, machine, name])
    }

    private func notify(_ characteristic: String, _ bytes: [UInt8]) {
        guard let connection else { return }
        guard !sending.contains(characteristic) else {
            latest[characteristic] = bytes
            return
        }
        sending.insert(characteristic)
        let command = ControlCommand.notify(characteristic: characteristic, value: ControlValue(hex: bytes), central: nil, wait: true)
        connection.request(command).assumeIsolated().whenComplete { [self] _ in
            sending.remove(characteristic)
            if let next = latest.removeValue(forKey: characteristic) { notify(characteristic, next) }
        }
    }

    /// The service data 0x4677 (state, capabilities) in the advertising set, on every change.
    private func advertise() {
        let update = AdvertisingDataUpdate(serviceData: [.init(uuid: BluetoothUUID(uuid16: 0x4677), data: session.serviceData)])
        connection?.request(.advertisingData(set: options.advertisingSet, update: update)).assumeIsolated().whenSuccess { [self] reply in
            guard case .failure(let e) = reply else { return }
            if !advertisingRefused {
                advertisingRefused = true
                logger.error("improv: the advertisement cannot carry the Improv service data: \(e.message)")
            }
        }
    }
}
