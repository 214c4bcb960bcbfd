import FuzzSupport
import GattCore
import GattHost

@testable import GattTransport

/// Fuzzes the kernel transport's rules (`KernelAdapter`) in the composition the daemon runs: the
/// `Peripheral` core in a `PeripheralStack<KernelAdapter>` over the rules, fed what a kernel
/// would say — sockets accepted, ATT PDUs with a security level, sockets closed, the adapter
/// monitor's HCI events and the pairing agent's mgmt events (both through their parsers),
/// channels accepted before or after their link, answers to mgmt and HCI commands — and run on
/// the stack's one timer. A stand-in shell records the actions and reports each write as done.
///
/// Input: one byte picks the config; then operations, each one selector byte and its arguments.
///
/// The oracle traps when a PDU is written to, or a security level read from, a socket that is
/// not being read (never started, or closed); when a socket is started twice; when a central is
/// reported connected twice or disconnected while not connected; when the stack's timer falls
/// due and is still due after its tick; and when, after the adapter goes down and every timer
/// has run, a central is still connected, a socket still open, or an accepted socket neither
/// read, closed nor handed over.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKernel(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let run = KernelRun(FuzzConfigs.pick(input.byte()))
    run.open()
    var steps = 0
    while !input.isAtEnd, steps < 256 {
        steps += 1
        run.step(&input)
    }
    run.finish()
    return 0
}

/// One run: the stack, the shell's record and the oracle's state.
final class KernelRun {
    let stack: PeripheralStack<KernelAdapter>
    let shell = RecordingShell()
    var now: Duration = .zero
    /// Sockets given to the rules, by the next id.
    var nextSocket = 1
    /// Sockets being read (started, not closed), with their bearer.
    var reading: [KernelSocketID: BearerID] = [:]
    /// Accepted sockets the rules have not started, closed or handed over yet.
    var unresolved: Set<KernelSocketID> = []
    /// Centrals reported connected.
    var up: Set<ConnectionID> = []
    /// The last session `open` started.
    var session = 0
    static let peers = [
        KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .lePublic),
        KernelBDAddress(BluetoothAddress("11:22:33:44:55:66")!, type: .leRandom),
        KernelBDAddress(BluetoothAddress("C0:00:00:00:00:02")!, type: .leRandom),
    ]
    static let server = L2CAPChannelServer(id: "echo", psm: 0x0081)

    init(_ config: GattConfiguration) {
        let payloads: AdvertisingPayloads
        do {
            payloads = try config.advertisingPayloads()
        } catch {
            fatalError("fuzz setup: \(config.name) has no advertising payloads: \(error)")
        }
        let core = Peripheral(
            database: config.makeDatabase(), payloads: payloads, otherSets: config.advertisingSets.compactMap { try? $0.build() },
            maxConnections: config.advertising.maxConnections)
        stack = PeripheralStack(core: core, below: KernelAdapter(adapterName: "hci0", configuration: config))
        // Wired as the daemon wires it; the shell hands each action to the oracle.
        stack.attachShell(shell) { [unowned self] in now }
        shell.observe = { [unowned self] in observe($0.action) }
    }

    func feed(_ call: (inout KernelAdapter, Duration) -> [KernelAction]) {
        shell.runKernel! { rules, now in call(&rules, now).map(KernelOutput.init) }
    }

    /// Checks each action as the shell would perform it.
    func observe(_ action: KernelAction) {
        trace("  -> \(action)")
        switch action {
        case .event(.connected(let id, _)):
            guard up.insert(id).inserted else { oracleViolation("\(id) reported connected twice") }
        case .event(.disconnected(let id, _, _)):
            guard up.remove(id) != nil else { oracleViolation("\(id) reported disconnected while not connected") }
        case .event(.lost):
            guard up.isEmpty else { oracleViolation("the adapter lost with \(up.count) central(s) not reported gone") }
        case .startReading(let socket, let bearer, let from, _, _):
            guard reading[socket] == nil else { oracleViolation("\(socket) started twice") }
            guard unresolved.remove(socket) != nil else { oracleViolation("\(socket) started, but it was not waiting") }
            guard socket == from || reading[from] != nil else { oracleViolation("\(socket) reads its security from \(from), which is not read") }
            reading[socket] = bearer
        case .write(let socket, _):
            guard let bearer = reading[socket] else { oracleViolation("a PDU written to \(socket), which is not read") }
            // The socket had room: the shell reports the bearer ready again.
            stack.handle(.readyToSend(bearer), now: now)
        case .readSecurity(let socket), .requestSecurity(let socket, _, _, _, _):
            guard reading[socket] != nil else { oracleViolation("\(action) on \(socket), which is not read") }
        case .close(let socket):
            reading[socket] = nil
            unresolved.remove(socket)
        case .openChannel(let socket, _, _, _):
            guard unresolved.remove(socket) != nil else { oracleViolation("\(socket) handed over, but it was not waiting") }
        default:
            break
        }
    }

    /// Opens the adapter (a new session) and brings it up.
    func open() {
        var decision = KernelAdapterLifecycle.OpenDecision.nothing
        feed { rules, _ in
            decision = rules.open()
            return []
        }
        guard case .start(let s) = decision else { return }
        session = s
        var info = ControllerInfo()
        info.address = Self.peers[0].address
        info.leFeatures = [.extendedAdvertising, .le2MPHY, .leCodedPHY, .dataPacketLengthExtension]
        feed { rules, _ in rules.opened(session: s, controller: info, support: nil, description: "fuzz") }
    }

    func socket() -> KernelSocketID {
        defer { nextSocket += 1 }
        return KernelSocketID(rawValue: nextSocket)
    }

    /// One of the sockets given out so far (or one never given).
    func anySocket(_ b: UInt8) -> KernelSocketID { KernelSocketID(rawValue: Int(b) % (nextSocket + 1)) }

    func step(_ input: inout FuzzInput) {
        let op = input.byte()
        let a = input.byte(), b = input.byte()
        let handle: UInt16? = a == 0xFF ? nil : 0x0040 + UInt16(a % 4)
        let peer = Self.peers[Int(b) % Self.peers.count]
        let levels: [SecurityLevel?] = [nil, .low, .medium, .high]
        trace("op \(op % 12) a=\(a) b=\(b) (next socket \(nextSocket), now \(now))")
        switch op % 12 {
        case 0, 1:
            let s = socket()
            unresolved.insert(s)
            feed { rules, now in rules.accepted(socket: s, handle: handle, peer: peer, security: .low, now: now) }
        case 2, 3:
            let s = anySocket(a)
            let pdu = input.chunk()
            let mtu: Int? = b < 0x40 ? nil : Int(b) * 4
            feed { rules, _ in rules.received(pdu, from: s, security: levels[Int(b) % 4], sendMTU: mtu) }
        case 4:
            let s = anySocket(a)
            feed { rules, now in rules.socketClosed(s, why: b % 2 == 0 ? nil : "read error 5", now: now) }
        case 5:
            // An HCI event from the raw socket, through the monitor's parser: a connection, a
            // disconnection, an encryption change (or garbage).
            let codes: [UInt8] = [0x3E, 0x05, 0x08, 0x30]
            let body = input.chunk()
            let packet: [UInt8] = [0x04, codes[Int(b) % codes.count], UInt8(truncatingIfNeeded: body.count)] + body
            if let event = KernelAdapterEvent(packet: packet) {
                feed { rules, now in rules.adapterEvent(event, now: now).actions }
            }
        case 6:
            // A mgmt event from the pairing agent's socket, through its parser.
            let codes: [UInt16] = [0x0009, 0x000A, 0x000F, 0x0010, 0x0011, 0x0017, 0x0018, 0x0019, 0x001C]
            let code = codes[Int(b) % codes.count]
            let parameters = input.chunk()
            let length = UInt16(parameters.count)
            let packet = [UInt8(code & 0xFF), UInt8(code >> 8), 0, 0, UInt8(length & 0xFF), UInt8(length >> 8)] + parameters
            if let event = KernelManagementEvent(packet: packet, index: 0) {
                feed { rules, now in rules.managementEvent(event, now: now) }
            }
        case 7:
            let s = socket()
            unresolved.insert(s)
            let channel = KernelWaitingChannel(
                a % 2 == 0 ? .enhancedATT : .server(Self.server), peer: peer, handle: handle, localCID: 0x0040 + UInt16(b % 3),
                mtu: b < 0x80 ? nil : Int(b) * 2, peerMTU: Int(b) + 23)
            feed { rules, now in rules.channelAccepted(s, channel, now: now) }
        case 8:
            tick()
        case 9:
            let s = anySocket(a)
            feed { rules, now in rules.securityRead(socket: s, level: levels[Int(b) % 4], now: now) }
        case 10:
            // What the daemon asks of a central's link (through the stack, as it does).
            let id = ConnectionID(handle ?? 0x1000)
            switch b % 5 {
            case 0: stack.respondToPairing(id, [.accept, .reject, .passkey(123_456), .confirm(true)][Int(a) % 4], now: now)
            case 1: stack.requestLink(id, .connectionParameters(LEConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, supervisionTimeout: 100)), now: now)
            case 2: stack.requestLink(id, .phy(tx: .le2M, rx: .le2M, coding: .noPreference), now: now)
            case 3: stack.cancelLinkRequest(id, .connectionParameters, now: now)
            default: stack.perform([.disconnect(id, reason: .remoteUserTerminatedConnection)], now: now)
            }
        default:
            // What the command thread brings back.
            let status = HCIStatus(a % 3 == 0 ? 0 : a)
            switch b % 4 {
            case 0: feed { rules, _ in rules.commandAnswered(.leSetPHY(handle: handle ?? 0x40, allPHYs: 0, txPHYs: 2, rxPHYs: 2, phyOptions: 0), status: status) }
            case 1: feed { rules, _ in rules.unpairFailed() }
            case 2:
                feed { rules, _ in
                    rules.keysNotLoaded(session: self.session)
                    return []
                }
            default:
                // The adapter goes down and comes back.
                feed { rules, now in rules.adapterEvent(.down(index: 0), now: now).actions }
                feed { rules, now in rules.adapterEvent(.up(index: 0), now: now).actions }
                open()
            }
        }
    }

    /// Runs the stack's timer at its deadline, as the daemon's does.
    func tick() {
        guard let deadline = stack.nextDeadline else { return }
        now = max(now, deadline)
        stack.tick(now: now)
        if let next = stack.nextDeadline, next <= now { oracleViolation("the timer is still due after its tick (\(next) <= \(now))") }
    }

    /// The adapter goes: every central is reported gone and every socket closed or handed over.
    func finish() {
        feed { rules, now in rules.adapterEvent(.down(index: 0), now: now).actions }
        var ticks = 0
        while stack.nextDeadline != nil, ticks < 1000 {
            ticks += 1
            tick()
        }
        guard up.isEmpty else { oracleViolation("\(up.sorted { $0.rawValue < $1.rawValue }) still connected after the adapter went") }
        guard reading.isEmpty else { oracleViolation("\(reading.keys.sorted()) still read after the adapter went") }
        guard unresolved.isEmpty else { oracleViolation("\(unresolved.sorted()) neither read, closed nor handed over after the adapter went") }
    }
}

/// The shell's half: each action goes to the run's oracle.
final class RecordingShell: KernelShell {
    var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)?
    var observe: ((KernelOutput) -> Void)?
    func perform(_ output: KernelOutput) { observe?(output) }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzKernelMain {
    static func main() { runLibFuzzer(fuzzKernel) }
}
