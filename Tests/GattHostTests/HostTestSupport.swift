import GattTestSupport
import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Little-endian helpers for hand-written packets.
func hostLE16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

/// The host tests' name for the one scripted controller (GattTestSupport).
typealias FakeController = ScriptedController

extension HostConfiguration {
    /// The configuration most host tests use: connectable, scannable, public address.
    static func test(
        maxConnections: Int? = nil, preferred: PreferredConnectionParameters? = nil, random: BluetoothAddress? = nil
    ) -> HostConfiguration {
        var a = AdvertisingConfiguration()
        a.localName = "gattd-test"
        a.serviceUUIDs = [0x180D]
        a.maxConnections = maxConnections
        a.preferredConnection = preferred
        if random != nil { a.ownAddressType = .random }
        var c = HostConfiguration(deviceName: "gattd", advertising: a)
        c.randomAddress = random
        return c
    }
}

/// Drives a `Host` against a `FakeController`, the way the daemon's I/O shell
/// does: every output is recorded; commands are answered at once unless
/// `autoAnswer` is off (then they wait in `unanswered`).
struct HostHarness {
    var host: H4Stack
    var controller: FakeController
    let payloads: AdvertisingPayloads
    var now: Duration = .zero
    var autoAnswer = true
    /// Everything the host sent, in order.
    var sent: [H4Packet] = []
    var events: [StackEvent] = []
    /// Commands sent and not answered yet (only with `autoAnswer` off).
    var unanswered: [H4Packet] = []
    /// Set when the host sent a command while another was unanswered.
    var violations: [String] = []

    static let central = BluetoothAddress("11:22:33:44:55:66")!

    init(
        configuration: HostConfiguration = .test(), controller: FakeController = FakeController(),
        att: ATTServerConfiguration = ATTServerConfiguration(), otherSets: [AdvertisingSet] = []
    ) {
        self.controller = controller
        // The fixture configuration always builds.
        let payloads = (try? AdvertisingPayloadBuilder.build(configuration.advertising, deviceName: configuration.deviceName))
            ?? AdvertisingPayloads(
                advertisingData: [], scanResponseData: [],
                parameters: AdvertisingParameters(intervalMin: 0xA0, intervalMax: 0xF0, advertisingType: .connectableUndirected),
                isBeaconOnly: false)
        self.payloads = payloads
        self.host = H4Stack(configuration: configuration, att: ATTServer(database: ATTFixture.database(), configuration: att), payloads: payloads, otherSets: otherSets)
    }

    // MARK: Logs

    var sentCommands: [H4Packet] { sent.filter { $0.type == .command } }
    var sentOpcodes: [HCIOpcode] { sent.compactMap { FakeController.parse($0)?.opcode } }
    var sentACL: [HCIACLPacket] { sent.compactMap { $0.type == .acl ? try? HCIACLPacket(decoding: $0.body) : nil } }
    var warnings: [String] { events.compactMap { if case .warning(let w) = $0 { w } else { nil } } }
    var fatals: [String] { events.compactMap { if case .fatal(let f) = $0 { f } else { nil } } }
    var attEvents: [ATTServerEvent] { events.compactMap { if case .att(let e) = $0 { e } else { nil } } }

    /// The L2CAP frames the host sent on `handle`, reassembled from its ACL packets.
    func sentFrames(handle: UInt16) -> [L2CAPBasicFrame] {
        var r = ACLReassembler()
        var frames: [L2CAPBasicFrame] = []
        for p in sentACL where p.handle == handle {
            for o in r.push(p) { if case .frame(let f) = o { frames.append(f) } }
        }
        return frames
    }

    /// Payloads of the frames sent on `handle` for `channel`.
    func sentPayloads(handle: UInt16, channel: L2CAPChannelID = .att) -> [[UInt8]] {
        sentFrames(handle: handle).filter { $0.channelID == channel }.map(\.payload)
    }

    mutating func clearLogs() {
        sent = []
        events = []
    }

    // MARK: Driving

    /// Records outputs, answering commands as they come when `autoAnswer` is on.
    mutating func take(_ outputs: [StackOutput]) {
        var batches = [outputs]
        while !batches.isEmpty {
            let batch = batches.removeFirst()
            for o in batch {
                switch o {
                case .event(let e): events.append(e)
                case .send(let p):
                    sent.append(p)
                    if p.type == .command {
                        unanswered.append(p)
                        if unanswered.count > 1 {
                            violations.append("\(FakeController.parse(p)?.opcode.description ?? "?") sent while another command was unanswered")
                        }
                    }
                }
            }
            if autoAnswer {
                while !unanswered.isEmpty {
                    let p = unanswered.removeFirst()
                    batches.append(host.receive(H4Packet(event: controller.answer(p)), now: now))
                }
            }
        }
    }

    /// Answers the oldest unanswered command (manual mode).
    mutating func answerNext(status: HCIStatus? = nil, numHCICommandPackets: UInt8? = nil) {
        guard !unanswered.isEmpty else {
            Issue.record("no unanswered command")
            return
        }
        let p = unanswered.removeFirst()
        var c = controller
        if let status, let op = FakeController.parse(p)?.opcode { c.status[op] = status }
        if let numHCICommandPackets { c.numHCICommandPackets = numHCICommandPackets }
        take(host.receive(H4Packet(event: c.answer(p)), now: now))
    }

    mutating func start() { take(host.start(payloads: payloads, now: now)) }

    /// Bring-up with every command answered; clears the logs afterwards.
    mutating func bringUp() {
        start()
        #expect(host.isReady)
        #expect(host.isAdvertising)
        #expect(violations.isEmpty)
        #expect(host.host.aclInvariantViolations.isEmpty)
        clearLogs()
    }

    mutating func deliver(_ event: HCIEvent) { take(host.receive(H4Packet(event: event), now: now)) }
    mutating func deliver(_ packet: H4Packet) { take(host.receive(packet, now: now)) }
    mutating func deliver(acl: HCIACLPacket) { take(host.receive(H4Packet(acl: acl), now: now)) }

    static func connectionComplete(
        handle: UInt16, role: HCIConnectionRole = .peripheral, status: HCIStatus = .success, peer: BluetoothAddress = central
    ) -> LEConnectionComplete {
        LEConnectionComplete(
            status: status, handle: handle, role: role, peerAddressType: .random, peerAddress: peer,
            connectionInterval: 24, peripheralLatency: 0, supervisionTimeout: 72, centralClockAccuracy: 0)
    }

    /// A central connects (legacy LE Connection Complete).
    mutating func connect(_ handle: UInt16, peer: BluetoothAddress = central) {
        deliver(.leMeta(.connectionComplete(Self.connectionComplete(handle: handle, peer: peer))))
    }

    /// A central connects to advertising set `set` as a Bluetooth 5 controller reports it:
    /// LE Enhanced Connection Complete [v1], then LE Advertising Set Terminated (§7.7.65.18).
    mutating func connectToSet(_ handle: UInt16, set: UInt8 = 0, peer: BluetoothAddress = central) {
        deliver(.leMeta(.enhancedConnectionComplete(Self.connectionComplete(handle: handle, peer: peer))))
        deliver(.leMeta(.advertisingSetTerminated(status: .success, advertisingHandle: set, connectionHandle: handle, completedExtendedAdvertisingEvents: 0)))
    }

    mutating func disconnected(_ handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection) {
        deliver(.disconnectionComplete(status: .success, handle: handle, reason: reason))
    }

    /// The central sends an L2CAP frame in one ACL packet (PB 0b10, as controllers do).
    mutating func receive(_ payload: [UInt8], channel: L2CAPChannelID = .att, handle: UInt16) {
        let frame = hostLE16(UInt16(payload.count)) + hostLE16(channel.rawValue) + payload
        deliver(acl: HCIACLPacket(handle: handle, packetBoundary: .firstFlushable, data: frame))
    }

    /// The controller reports sent packets as transmitted.
    mutating func completed(_ entries: [(handle: UInt16, count: UInt16)]) {
        deliver(.numberOfCompletedPackets(entries.map { HCICompletedPackets(handle: $0.handle, count: $0.count) }))
    }

    mutating func advance(to t: Duration) {
        now = t
        take(host.tick(now: t))
    }
}

// Keep failure messages short: a Host dump includes the whole database.
extension H4Stack: CustomTestStringConvertible {
    public var testDescription: String {
        "Host(ready: \(isReady), advertising: \(isAdvertising), connections: \(connections.keys.sorted()), idle: \(isIdle))"
    }
}

extension HostHarness: CustomTestStringConvertible {
    var testDescription: String { "HostHarness(\(host.testDescription), sent: \(sent.count), events: \(events.count))" }
}

/// Legacy and extended advertising commands, as Vol 4 Part E §3.1.1 sorts them.
enum AdvertisingCommandKind: Equatable {
    case legacy
    case extended

    init?(_ opcode: HCIOpcode) {
        switch opcode {
        case .leSetAdvertisingParameters, .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData, .leSetScanResponseData,
            .leSetAdvertisingEnable:
            self = .legacy
        case _ where FakeController.extendedAdvertisingCommands.contains(opcode):
            self = .extended
        default:
            return nil
        }
    }

    /// Where a command trace mixes them: a legacy advertising command after an extended one
    /// since the last Reset, or the other way round (the controller answers Command Disallowed).
    static func violations(_ trace: [HCIOpcode]) -> [String] {
        var used: AdvertisingCommandKind?
        var out: [String] = []
        for (i, opcode) in trace.enumerated() {
            if opcode == .reset { used = nil }
            guard let kind = AdvertisingCommandKind(opcode) else { continue }
            if let used, used != kind { out.append("command \(i): \(opcode) after \(used) advertising commands") }
            used = used ?? kind
        }
        return out
    }
}
