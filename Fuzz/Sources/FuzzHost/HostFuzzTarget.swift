import FuzzSupport
import GattCore

/// Fuzzes the H4 path: `Host` (HCI, ACL reassembly, L2CAP, signalling, SMP refusal) wired
/// to the `Peripheral` core (ATT) as the daemon wires them, through their public entry
/// points only: `Host.start/receive/tick/send/flush/setAdvertising/disconnect` and
/// `Peripheral.handle/tick`.
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
///   every SDU received is consumed and every channel invited sends an SDU back.
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
    var harness = HostFuzzHarness(
        config: FuzzConfigs.pick(flags & 0x07), answerCommands: flags & 0x10 == 0, security: flags & 0x20 != 0, extended: flags & 0x40 != 0)
    if flags & 0x80 != 0 {
        harness.host.setL2CAPChannelServers([
            L2CAPChannelServer(id: "open", psm: 0x80, mtu: 100), L2CAPChannelServer(id: "secret", psm: 0x81, security: .encryption),
        ])
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

struct HostFuzzHarness {
    var host: Host
    var core: Peripheral
    /// Transport events waiting for the core (fed in order, as the daemon does).
    var pending: [TransportEvent] = []
    /// Credit-based channel events waiting for `channels`.
    var channelEvents: [CreditBasedChannelEvent] = []
    var lastSDU = [UInt8](repeating: 0x5A, count: 300)
    var pumpingChannels = false
    var draining = false
    let payloads: AdvertisingPayloads
    let answerCommands: Bool
    var now: Duration = .zero
    /// ACL packets sent per handle and not completed yet (the controller's view).
    var inFlight: [UInt16: Int] = [:]
    /// Commands to answer, oldest first.
    var unanswered: [[UInt8]] = []
    /// The scripted controller has LE Extended Advertising.
    let extended: Bool
    /// The kind of advertising commands sent since the last Reset (§3.1.1).
    var advertisingKind: AdvertisingKind?

    init(config: GattConfiguration, answerCommands: Bool, security: Bool, extended: Bool) {
        self.extended = extended
        var hostConfiguration = HostConfiguration(deviceName: config.name, advertising: config.advertising)
        hostConfiguration.randomAddress = BluetoothAddress("C0:11:22:33:44:55")
        if security { hostConfiguration.security = SecurityManagerConfiguration() }
        host = Host(configuration: hostConfiguration)
        if security {
            // A bond for the fuzzed central's usual address, so LTK requests can be answered.
            host.setBonds([Bond(address: BluetoothAddress("C0:00:00:00:00:01")!, addressType: .random,
                                longTermKey: [UInt8](repeating: 0x5A, count: 16), keySize: 16, authenticated: false, secureConnections: true)])
        }
        do {
            payloads = try config.advertisingPayloads()
        } catch {
            fatalError("fuzz setup: \(config.name) has no advertising payloads: \(error)")
        }
        // Every set of the config (config/advertising-sets.json has three: one handle each, or turns).
        let otherSets = config.advertisingSets.compactMap { try? $0.build() }
        core = Peripheral(
            database: config.makeDatabase(), payloads: payloads, otherSets: otherSets, maxConnections: config.advertising.maxConnections)
        self.answerCommands = answerCommands
    }

    /// Starts the host and answers every command until it is ready.
    mutating func bringUp() {
        check(host.start(now: now))
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

    mutating func deliver(_ packet: H4Packet) {
        if packet.type == .event { noteCompletions(packet.body) }
        check(host.receive(packet, now: now))
        if answerCommands {
            while !unanswered.isEmpty, !host.hasFailed { answerOne() }
        }
    }

    mutating func advance(by step: Duration) {
        now += step
        check(host.tick(now: now))
        perform(core.tick(now: now))
    }

    mutating func answerOne() {
        let command = unanswered.removeFirst()
        let event = ScriptedController.answer(command, extended: extended)
        noteCompletions(event)
        check(host.receive(H4Packet(type: .event, body: event), now: now))
    }

    /// Number Of Completed Packets frees buffers the way the host counts them: never
    /// more than it has in flight on the handle.
    mutating func noteCompletions(_ event: [UInt8]) {
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

    mutating func check(_ outputs: [HostOutput]) {
        for output in outputs {
            switch output {
            case .send(let packet):
                checkSent(packet)
            case .event(.transport(let e)):
                if case .connected(let id, _) = e { inFlight[id.rawValue] = 0 }
                // A closed connection's packets are flushed: their buffers are free.
                if case .disconnected(let id, _, _) = e { inFlight[id.rawValue] = nil }
                pending.append(e)
            case .event(.channel(let e)):
                channelEvents.append(e)
            case .event:
                break
            }
        }
        drain()
        channels()
    }

    /// The layer above the credit-based channels: takes every SDU, answers every invitation
    /// with an SDU (the last one received, or 300 bytes), never re-entrantly.
    mutating func channels() {
        guard !pumpingChannels else { return }
        pumpingChannels = true
        while !channelEvents.isEmpty {
            switch channelEvents.removeFirst() {
            case .received(let id, let sdu):
                lastSDU = sdu
                check(host.consumed(on: id, now: now))
            case .ready(let id):
                check(host.send(sdu: lastSDU, on: id, now: now))
            case .opened, .closed:
                break
            }
        }
        pumpingChannels = false
    }

    /// Feeds the core the transport's events, in order, never re-entrantly.
    mutating func drain() {
        guard !draining else { return }
        draining = true
        while !pending.isEmpty {
            let e = pending.removeFirst()
            perform(core.handle(e, now: now))
        }
        draining = false
    }

    /// Performs the core's outputs on the host, then sends what they queued.
    mutating func perform(_ outputs: [PeripheralOutput]) {
        for output in outputs {
            switch output {
            case .send(let id, let pdu): host.send(pdu, on: id)
            case .setAdvertising(let sets): check(host.setAdvertising(sets, now: now))
            case .disconnect(let id, let reason): check(host.disconnect(id, reason: reason, now: now))
            case .requestSecurity, .event: break
            }
        }
        check(host.flush(now: now))
    }

    mutating func checkSent(_ packet: H4Packet) {
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

/// Answers commands like a capable controller: LE with data length extension and
/// 2M PHY, 3 LE ACL buffers of 27 bytes, every command supported; `extended`: LE
/// Extended Advertising too, 16 sets of up to 1650 bytes.
enum ScriptedController {
    static let commandStatusOpcodes: Set<HCIOpcode> = [.disconnect, .leSetPHY, .leConnectionUpdate]

    /// The event (code, length, parameters) answering a command body.
    static func answer(_ command: [UInt8], extended: Bool) -> [UInt8] {
        let opcode = HCIOpcode(rawValue: UInt16(command[0]) | UInt16(command[1]) << 8)
        let op = [command[0], command[1]]
        if commandStatusOpcodes.contains(opcode) { return [HCIEvent.commandStatusCode, 4, 0x00, 1] + op }
        let parameters = [0x00] + returnParameters(opcode, Array(command.dropFirst(3)), extended: extended)
        return [HCIEvent.commandCompleteCode, UInt8(3 + parameters.count), 1] + op + parameters
    }

    static func returnParameters(_ opcode: HCIOpcode, _ parameters: [UInt8], extended: Bool) -> [UInt8] {
        switch opcode {
        case .readLocalVersionInformation: return [0x0C, 0x34, 0x12, 0x0C, 0xF1, 0x05, 0x78, 0x56]
        case .readBDADDR: return [0x01, 0x00, 0x00, 0xEE, 0xFF, 0xC0]
        case .readLocalSupportedCommands: return [UInt8](repeating: 0xFF, count: 64)
        case .readLocalSupportedFeatures: return [0, 0, 0, 0, 0x40, 0, 0, 0]
        // Encryption, data length, 2M PHY; bit 12: LE Extended Advertising.
        case .leReadLocalSupportedFeatures: return [0x21, extended ? 0x11 : 0x01, 0, 0, 0, 0, 0, 0]
        case .leReadNumberOfSupportedAdvertisingSets: return [16]
        case .leReadMaximumAdvertisingDataLength: return [0x72, 0x06]
        case .leSetExtendedAdvertisingParameters: return [0x00]  // Selected_TX_Power
        case .leReadBufferSize: return [27, 0, 3]
        case .leReadBufferSizeV2: return [27, 0, 3, 251, 0, 4]
        case .readBufferSize: return [27, 0, 64, 3, 0, 0, 0]
        case .leSetDataLength, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply,
            .leRemoteConnectionParameterRequestNegativeReply:
            return Array(parameters.prefix(2))
        default: return []
        }
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzHostMain {
    static func main() { runLibFuzzer(fuzzHost) }
}
