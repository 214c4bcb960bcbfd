/// The Improv service's state machine (improv-wifi.com/ble, current version 2.2): what each
/// RPC, authorization and backend answer does to Current State and Error State, and what to
/// run and notify. Pure: the agent (`ImprovAgent`) does the I/O, with the current time.
struct ImprovSession: Equatable {
    /// Current State (characteristic …8001).
    enum State: UInt8 {
        case authorizationRequired = 0x01
        case authorized = 0x02
        case provisioning = 0x03
        case provisioned = 0x04
    }
    /// Error State (characteristic …8002).
    enum ErrorState: UInt8 {
        case none = 0x00
        case invalidRPC = 0x01
        case unknownCommand = 0x02
        case unableToConnect = 0x03
        case notAuthorized = 0x04
        case unknown = 0xFF
    }
    enum Command: UInt8 {
        case wifiSettings = 0x01
        case identify = 0x02
        case deviceInfo = 0x03
        case scan = 0x04
    }
    /// Capabilities (characteristic …8005): bit 0 identify, bit 1 device info, bit 2 scan.
    struct Capabilities: Equatable {
        var identify: Bool
        var scan: Bool
        var byte: UInt8 { (identify ? 0x01 : 0) | 0x02 | (scan ? 0x04 : 0) }
    }

    /// What to do.
    enum Action: Equatable {
        /// Current State or Error State changed: notify it (and Current State: the advertisement's service data).
        case state(State)
        case error(ErrorState)
        /// Notify an RPC Result.
        case result(ImprovFrame)
        case connect(ssid: String, password: String)
        case identify
        case scan
        /// Run `authorizationExpired(now:)` at this time.
        case wake(at: Duration)
    }

    let capabilities: Capabilities
    /// How long an authorization lasts; nil: no authorization needed (starts authorized).
    let authorizationTimeout: Duration?
    private(set) var state: State
    private(set) var error = ErrorState.none
    /// When the authorization ends.
    private(set) var authorizedUntil: Duration?
    /// Whether a scan is running (a second request waits for its result).
    private(set) var scanning = false

    init(capabilities: Capabilities, authorizationTimeout: Duration?) {
        self.capabilities = capabilities
        self.authorizationTimeout = authorizationTimeout
        self.state = authorizationTimeout == nil ? .authorized : .authorizationRequired
    }

    var isAuthorized: Bool { state == .authorized || (state == .provisioned && authorizationTimeout == nil) }

    /// A frame, or a checksum failure, from RPC Command.
    mutating func received(_ input: ImprovFrameAssembler.Output, now: Duration) -> [Action] {
        guard case .frame(let frame) = input else { return fail(.invalidRPC) }
        guard let command = Command(rawValue: frame.command) else { return fail(.unknownCommand) }
        // A failure replaces the error state; a command taken clears it first.
        switch command {
        case .wifiSettings:
            guard let (ssid, password) = ImprovFrame.wifiSettings(frame.data) else { return fail(.invalidRPC) }
            guard state == .authorized || (state == .provisioned && isAuthorized) else { return fail(.notAuthorized) }
            state = .provisioning
            authorizedUntil = nil
            return clearError() + [.state(.provisioning), .connect(ssid: ssid, password: password)]
        case .identify:
            guard frame.data.isEmpty else { return fail(.invalidRPC) }
            guard capabilities.identify else { return fail(.unknownCommand) }
            return clearError() + [.identify]
        case .deviceInfo:
            guard frame.data.isEmpty else { return fail(.invalidRPC) }
            // The strings come from the agent.
            return clearError() + [.result(ImprovFrame(command: Command.deviceInfo.rawValue, data: []))]
        case .scan:
            guard frame.data.isEmpty else { return fail(.invalidRPC) }
            guard capabilities.scan else { return fail(.unknownCommand) }
            guard !scanning else { return clearError() }  // the running scan's result answers both
            scanning = true
            return clearError() + [.scan]
        }
    }

    /// The control op (`gattctl improv authorize`): authorized until `now` + the timeout.
    mutating func authorize(now: Duration) -> [Action] {
        guard let timeout = authorizationTimeout else { return [] }
        switch state {
        case .authorizationRequired, .authorized:
            let was = state
            state = .authorized
            authorizedUntil = now + timeout
            return (was == .authorized ? [] : [.state(.authorized)]) + [.wake(at: now + timeout)]
        case .provisioning, .provisioned:
            return []
        }
    }

    /// A wake-up: an authorization that has run out is revoked.
    mutating func authorizationExpired(now: Duration) -> [Action] {
        guard state == .authorized, let until = authorizedUntil, now >= until else { return [] }
        state = .authorizationRequired
        authorizedUntil = nil
        return [.state(.authorizationRequired)]
    }

    /// The backend's answer to `connect`. Connected: Provisioned, and the RPC Result with the
    /// redirect URL (empty list without one). Not: Unable to Connect; back to Authorized with
    /// the authorization's timeout started over (or Authorization Required without a timeout left).
    mutating func connectFinished(connected: Bool, redirectURL: String?, now: Duration) -> [Action] {
        guard state == .provisioning else { return [] }
        if connected {
            state = .provisioned
            return [.state(.provisioned), .result(.result(Command.wifiSettings.rawValue, strings: redirectURL.map { [$0] } ?? []))]
        }
        error = .unableToConnect
        state = .authorized
        var out: [Action] = [.error(.unableToConnect), .state(.authorized)]
        if let timeout = authorizationTimeout {
            authorizedUntil = now + timeout
            out.append(.wake(at: now + timeout))
        }
        return out
    }

    /// The scan's networks: (SSID, RSSI in dBm, auth type).
    mutating func scanFinished(_ networks: [(ssid: String, rssi: Int, auth: String)]) -> [Action] {
        guard scanning else { return [] }
        scanning = false
        return [.result(.result(Command.scan.rawValue, strings: networks.flatMap { [$0.ssid, String($0.rssi), $0.auth] }))]
    }

    private mutating func fail(_ e: ErrorState) -> [Action] {
        error = e
        return [.error(e)]
    }

    /// A well-formed frame clears a previous error.
    private mutating func clearError() -> [Action] {
        guard error != .none else { return [] }
        error = .none
        return [.error(.none)]
    }

    /// The advertisement's service data 0x4677: state, capabilities, four reserved zeros.
    var serviceData: [UInt8] { [state.rawValue, capabilities.byte, 0, 0, 0, 0] }
}
