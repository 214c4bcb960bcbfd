import FuzzSupport
import GattCore
import GattHost
import GattTestSupport

/// Fuzzes the H4 path: `Host` (HCI, ACL reassembly, L2CAP, signalling, SMP) under the
/// `Peripheral` core (ATT) in the composition the daemon runs — `PeripheralStack<H4Host>`, its
/// shell wired by `attachShell` — through public entry points only (the
/// shell's `runHost` for what it reads, the stack's `tick`).
///
/// Input: one flags byte, then an H4 byte stream as a transport would read it.
/// - bits 0–2 pick the config under config/;
/// - bit 3 clear: a scripted controller brings the host up first (the stream then
///   starts with a ready host); set: the stream must do the bring-up itself;
/// - bit 4 clear: the scripted controller keeps answering every command the host
///   sends (Command Complete/Status, success) while the stream is fed;
/// - bit 5 set: the Security Manager is on (SMP frames reach a pairing responder per
///   link, LTK requests are answered from a bond; its prompts are left unanswered);
/// - bit 6 set: the scripted controller is a Bluetooth 5 one with LE Extended Advertising
///   (the host advertises with an advertising set), else a legacy one;
/// - bit 7 set: credit-based channels are accepted (PSM 0x0080 open, 0x0081 encrypted):
///   every SDU received is consumed and every channel invited sends an SDU back; and
///   Enhanced ATT is on (PSM 0x0027 on encrypted links: with bit 5 a bonded central can
///   encrypt, and each channel is an ATT bearer of the core, Server Supported Features says so).
///
/// The oracle traps when the host sends a command whose parameter length is wrong, a
/// legacy advertising command after an extended one since the last Reset or the other
/// way round (Core Spec Vol 4 Part E §3.1.1), or chooses other advertising commands than
/// the scripted controller calls for,
/// an ACL packet that does not decode, is not a start or continuation fragment,
/// is longer than the controller's ACL buffers or is for a handle that is not
/// connected, or more ACL packets than the controller has buffers (packets are
/// counted in flight until Number Of Completed Packets or the disconnection).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHost(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let harness = HostFuzzHarness(
        config: FuzzConfigs.pick(flags & 0x07), answerCommands: flags & 0x10 == 0, security: flags & 0x20 != 0, extended: flags & 0x40 != 0)
    if flags & 0x80 != 0 {
        harness.stack.below.setL2CAPChannelServers([
            L2CAPChannelServer(id: "open", psm: 0x80, mtu: 100), L2CAPChannelServer(id: "secret", psm: 0x81, security: .encryption),
        ])
        harness.stack.below.setEnhancedATT(true)
        harness.stack.core.setEnhancedATT(true)
    }
    if flags & 0x08 == 0 { harness.bringUp() }
    var deframer = H4Deframer()
    // The stream arrives in reads of up to 64 bytes, 1 ms apart, as from a UART;
    // a framing error ends it (the transport would reset the controller).
    stream: while !input.isAtEnd {
        for output in deframer.feed(input.take(64)) {
            guard case .packet(let packet) = output else { break stream }
            harness.deliver(packet)
            if harness.host.hasFailed { return 0 }
        }
        harness.advance(by: .milliseconds(1))
        if harness.host.hasFailed { return 0 }
    }
    // Every timer fires (command timeouts, ATT transaction timeouts).
    for _ in 0..<4 where !harness.host.hasFailed { harness.advance(by: .seconds(10)) }
    return 0
}

final class HostFuzzHarness {
    let stack: PeripheralStack<H4Host>
    let shell = Shell()
    /// The H4 host's state, for the oracle (a copy).
    var host: Host { stack.below.host }
    /// Credit-based channel events waiting for `channels`.
    var channelEvents: [CreditBasedChannelEvent] = []
    var lastSDU = [UInt8](repeating: 0x5A, count: 300)
    var pumpingChannels = false
    let answerCommands: Bool
    let controller: ScriptedController
    var now: Duration = .zero
    /// ACL packets sent per handle and not completed yet (the controller's view).
    var inFlight: [UInt16: Int] = [:]
    /// Commands to answer, oldest first.
    var unanswered: [[UInt8]] = []
    /// The scripted controller has LE Extended Advertising.
    let extended: Bool
    /// The kind of advertising commands sent since the last Reset (§3.1.1).
    var advertisingKind: AdvertisingKind?
    /// Links that came up and are asked for new connection parameters, PHYs and data length
    /// after the packet (a program's `connection_parameters`, `phy` and `data_length`).
    var newLinks: [ConnectionID] = []

    init(config: GattConfiguration, answerCommands: Bool, security: Bool, extended: Bool) {
        self.extended = extended
        var hostConfiguration = HostConfiguration(deviceName: config.name, advertising: config.advertising)
        hostConfiguration.randomAddress = BluetoothAddress("C0:11:22:33:44:55")
        if security { hostConfiguration.security = SecurityManagerConfiguration() }
        var host = H4Host(host: hostConfiguration)
        if security {
            // A bond for the fuzzed central's usual address, so LTK requests can be answered.
            host.setBonds([Bond(address: BluetoothAddress("C0:00:00:00:00:01")!, addressType: .random,
                                longTermKey: [UInt8](repeating: 0x5A, count: 16), keySize: 16, authenticated: false, secureConnections: true)])
        }
        let payloads: AdvertisingPayloads
        do {
            payloads = try config.advertisingPayloads()
        } catch {
            fatalError("fuzz setup: \(config.name) has no advertising payloads: \(error)")
        }
        // Every set of the config (config/advertising-sets.json has three: one handle each, or turns).
        let otherSets = config.advertisingSets.compactMap { try? $0.build() }
        let core = Peripheral(
            database: config.makeDatabase(), payloads: payloads, otherSets: otherSets, maxConnections: config.advertising.maxConnections)
        stack = PeripheralStack(core: core, below: host)
        // A capable controller: every command, 3 LE ACL buffers of 27 bytes.
        var controller = extended ? ScriptedController.extended : ScriptedController()
        // With extended advertising also the Connection Parameters Request procedure: link
        // requests go as LE Connection Update; without, as the L2CAP request.
        if extended { controller.leFeatures.insert(.connectionParametersRequestProcedure) }
        controller.supportsEveryCommand = true
        controller.leBuffers = (27, 3)
        controller.aclBuffers = (27, 3)
        self.controller = controller
        self.answerCommands = answerCommands
        shell.harness = self
        stack.attachShell(shell) { [unowned self] in now }
    }

    /// The H4 host's shell as the daemon's stack sees it: the harness's calls on the host go
    /// through `runHost` (set by `attachShell`), each a turn of the stack; what the stack hands
    /// the shell goes to the harness's oracle.
    final class Shell: HostShell {
        unowned(unsafe) var harness: HostFuzzHarness!
        var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)?
        func perform(_ output: HostOutput) { harness.observe(output) }
    }

    /// A call on the H4 host, in a turn of the stack.
    func runHost(_ call: (inout H4Host, Duration) -> [HostOutput]) { shell.runHost!(call) }

    /// Starts the host and answers every command until it is ready.
    func bringUp() {
        runHost({ h, now in h.start(now: now) })
        var rounds = 0
        while !host.isReady, !unanswered.isEmpty, rounds < 100 {
            answerOne()
            rounds += 1
        }
        if !host.isReady { oracleViolation("the scripted controller did not bring the host up") }
        if (host.controller.advertisingCommands != .legacy) != extended {
            oracleViolation("\(host.controller.advertisingCommands) chosen for a controller \(extended ? "with" : "without") LE Extended Advertising")
        }
    }

    func deliver(_ packet: H4Packet) {
        if packet.type == .event { noteCompletions(packet.body) }
        runHost({ h, now in h.receive(packet, now: now) })
        if answerCommands {
            while !unanswered.isEmpty, !host.hasFailed { answerOne() }
        }
        while !newLinks.isEmpty, !host.hasFailed {
            let id = newLinks.removeFirst()
            let link = LEConnectionParameters(intervalMin: 12, intervalMax: 24, latency: 0, supervisionTimeout: 200)
            stack.requestLink(id, .connectionParameters(link), now: now)
            stack.requestLink(id, .phy(tx: .le2M, rx: .leCoded, coding: .s2), now: now)
            stack.requestLink(id, .dataLength(txOctets: 200), now: now)
            // The daemon's timeout for one kind, while the others wait.
            if id.rawValue & 1 == 0 { stack.cancelLinkRequest(id, .phy, now: now) }
        }
        channels()
    }

    func advance(by step: Duration) {
        now += step
        stack.tick(now: now)
        channels()
    }

    func answerOne() {
        let event = controller.answer(command: unanswered.removeFirst())
        noteCompletions(event)
        runHost({ h, now in h.receive(H4Packet(type: .event, body: event), now: now) })
    }

    /// Number Of Completed Packets frees buffers the way the host counts them: never
    /// more than it has in flight on the handle.
    func noteCompletions(_ event: [UInt8]) {
        guard event.count >= 3, event[0] == HCIEvent.numberOfCompletedPacketsCode else { return }
        let entries = Int(event[2])
        guard event.count >= 3 + 4 * entries, Int(event[1]) == event.count - 2 else { return }
        for i in 0..<entries {
            let base = 3 + 4 * i
            let handle = (UInt16(event[base]) | UInt16(event[base + 1]) << 8) & 0x0FFF
            let count = Int(UInt16(event[base + 2]) | UInt16(event[base + 3]) << 8)
            if let n = inFlight[handle] { inFlight[handle] = n - min(n, count) }
        }
    }

    /// Every output of the host, as it makes them: packets are checked, links counted;
    /// channel events wait for `channels`.
    func observe(_ output: HostOutput) {
        switch output {
        case .send(let packet): checkSent(packet)
        case .event(.transport(.connected(let id, _))):
            inFlight[id.rawValue] = 0
            newLinks.append(id)
        // A closed connection's packets are flushed: their buffers are free.
        case .event(.transport(.disconnected(let id, _, _))): inFlight[id.rawValue] = nil
        case .event(.channel(let e)): channelEvents.append(e)
        case .event: break
        }
    }

    /// The layer above the credit-based channels: takes every SDU, answers every invitation
    /// with an SDU (the last one received, or 300 bytes), never re-entrantly.
    func channels() {
        guard !pumpingChannels else { return }
        pumpingChannels = true
        while !channelEvents.isEmpty {
            switch channelEvents.removeFirst() {
            case .received(let id, let sdu):
                lastSDU = sdu
                runHost({ h, now in h.host.consumed(on: id, now: now) })
            case .ready(let id):
                let sdu = lastSDU
                runHost({ h, now in h.host.send(sdu: sdu, on: id, now: now) })
            case .opened, .closed:
                break
            }
        }
        pumpingChannels = false
    }

    func checkSent(_ packet: H4Packet) {
        switch packet.type {
        case .command:
            let b = packet.body
            if b.count < 3 || Int(b[2]) != b.count - 3 { oracleViolation("malformed command \(hex(b))") }
            let opcode = HCIOpcode(rawValue: UInt16(b[0]) | UInt16(b[1]) << 8)
            if opcode == .reset { advertisingKind = nil }
            if let kind = AdvertisingKind(opcode) {
                if let used = advertisingKind, used != kind { oracleViolation("\(opcode) after \(used) advertising commands since the last Reset") }
                advertisingKind = kind
            }
            unanswered.append(b)
        case .acl:
            guard let acl = try? HCIACLPacket(decoding: packet.body) else { oracleViolation("malformed ACL \(hex(packet.body))") }
            if acl.packetBoundary != .firstNonFlushable && acl.packetBoundary != .continuing {
                oracleViolation("ACL with packet boundary \(acl.packetBoundary)")
            }
            if acl.data.count > host.controller.aclDataPacketLength {
                oracleViolation("\(acl.data.count)-byte ACL above the controller's \(host.controller.aclDataPacketLength)")
            }
            guard let n = inFlight[acl.handle] else {
                oracleViolation("ACL for handle \(acl.handle), which is not connected")
            }
            inFlight[acl.handle] = n + 1
            let total = inFlight.values.reduce(0, +)
            if total > host.controller.totalACLDataPackets {
                oracleViolation("\(total) ACL packets in flight, the controller has \(host.controller.totalACLDataPackets) buffers")
            }
        default:
            oracleViolation("the host sent a \(packet.type) packet")
        }
    }
}

/// Legacy and extended advertising commands, as Vol 4 Part E §3.1.1 sorts them.
enum AdvertisingKind: Equatable {
    case legacy
    case extended

    init?(_ opcode: HCIOpcode) {
        switch opcode.rawValue {
        case 0x2006...0x200A: self = .legacy  // LE Set Advertising Parameters … Enable
        case 0x2035...0x203D: self = .extended  // LE Set Advertising Set Random Address … LE Clear Advertising Sets
        default: return nil
        }
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzHostMain {
    static func main() { runLibFuzzer(fuzzHost) }
}
