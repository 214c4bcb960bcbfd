import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// `PeripheralStack`'s rules, against a scripted half below the seam that records every call:
/// the core is never re-entered and hears events in order, one flush per drained batch, a
/// fatal output is a `.lost`, security calls go down, one deadline for both halves.
@Suite struct PeripheralStackTests {
    static let a = ConnectionID(0x40), b = ConnectionID(0x41), c = ConnectionID(0x42)
    static func peer(_ n: UInt8) -> TransportPeer {
        TransportPeer(address: BluetoothAddress("11:22:33:44:55:0\(n)")!, addressType: .random, handle: 0x40)
    }
    /// Read Request for the Device Name (handle 3).
    static let read: [UInt8] = [0x0A, 0x03, 0x00]

    /// A stack on `ScriptedBelow`, recording what the core says and what the half below was asked.
    static func stack() -> (PeripheralStack<ScriptedBelow>, Log) {
        let core = Peripheral(database: ATTFixture.database(), payloads: PeripheralFixture.payloads, maxConnections: 4)
        let stack = PeripheralStack(core: core, below: ScriptedBelow())
        let log = Log()
        stack.onEvent = { log.entries.append("event \(Self.name($0))") }
        stack.onTurnEnd = { log.entries.append("turn end") }
        stack.handle(.ready(address: PeripheralFixture.address, description: "scripted"), now: .zero)
        stack.handle(.advertisingChanged(true), now: .zero)
        log.entries = []
        stack.below.calls = []
        return (stack, log)
    }

    static func name(_ e: PeripheralEvent) -> String {
        switch e {
        case .connected(let c): "connected \(c.id)"
        case .disconnected(let c, _, let detail): "disconnected \(c.id) \(detail ?? "")"
        case .warning(let m): "warning \(m)"
        case .att: "att"
        case .securityChanged(let c): "security \(c.id) \(c.security)"
        default: "\(e)"
        }
    }

    @Test func eventsRaisedWhileHandlingEventsWaitAndComeInOrder() {
        let (stack, log) = Self.stack()
        // The shell reacts to the first connection by calling the half below, which raises an
        // event at once: it must wait for the events already queued, not cut in.
        stack.onEvent = { [unowned stack] e in
            log.entries.append("event \(Self.name(e))")
            if case .connected(let c) = e, c.id == Self.a {
                stack.callBelow(now: .zero) { _ in [.event(.warning("raised by the shell"))] }
                log.entries.append("shell call returned")
            }
        }
        stack.callBelow(now: .zero) { _ in
            [.event(.connected(Self.a, Self.peer(1))), .event(.connected(Self.b, Self.peer(2))), .event(.warning("third"))]
        }
        #expect(log.entries == [
            "event connected \(Self.a)", "shell call returned", "event connected \(Self.b)", "event warning third",
            "event warning raised by the shell", "turn end",
        ])
    }

    @Test func theShellsCallsDuringAnEventAreDoneAtOnce() {
        let (stack, log) = Self.stack()
        stack.onEvent = { [unowned stack] e in
            log.entries.append("event \(Self.name(e))")
            if case .connected(let c) = e { stack.perform([.disconnect(c.id, reason: .remoteUserTerminatedConnection)], now: .zero) }
        }
        stack.callBelow(now: .zero) { _ in [.event(.connected(Self.a, Self.peer(1))), .event(.connected(Self.b, Self.peer(2)))] }
        #expect(stack.below.calls == ["disconnect \(Self.a)", "disconnect \(Self.b)", "flush"])
        #expect(log.entries.filter { $0 == "turn end" }.count == 1, "the shell's call joined the running turn")
    }

    @Test func oneFlushPerDrainedBatch() {
        let (stack, _) = Self.stack()
        var events: [ScriptedBelow.Output] = []
        for (id, n) in [(Self.a, UInt8(1)), (Self.b, 2), (Self.c, 3)] {
            events += [.event(.connected(id, Self.peer(n))), .event(.readyToSend(.fixed(id))), .event(.received(.fixed(id), Self.read))]
        }
        // The flush frees room on every link: a second batch (nothing to send), a second flush.
        stack.below.flushes = [[.event(.readyToSend(.fixed(Self.a))), .event(.readyToSend(.fixed(Self.b))), .event(.readyToSend(.fixed(Self.c)))]]
        stack.callBelow(now: .zero) { _ in events }
        #expect(stack.below.calls == ["send \(Self.a) opcode 11", "send \(Self.b) opcode 11", "send \(Self.c) opcode 11", "flush", "flush"])
    }

    @Test func aFatalOutputIsALostControllerForTheCore() {
        let (stack, log) = Self.stack()
        var shell: [ScriptedBelow.Output] = []
        stack.onBelowOutput = { shell.append($0) }
        stack.callBelow(now: .zero) { _ in [.event(.connected(Self.a, Self.peer(1)))] }
        log.entries = []
        stack.callBelow(now: .zero) { _ in [.fatal("the controller stopped answering")] }
        #expect(log.entries.first == "event disconnected \(Self.a) the controller stopped answering")
        #expect(log.entries.contains("event \(PeripheralEvent.controllerLost(reason: "the controller stopped answering"))"))
        #expect(stack.core.connections.isEmpty && stack.core.address == nil)
        #expect(shell.last == .fatal("the controller stopped answering"), "the shell drops the transport")
    }

    @Test func pairingAnswersAndSecurityRequestsGoDown() {
        let (stack, log) = Self.stack()
        stack.callBelow(now: .zero) { _ in [.event(.connected(Self.a, Self.peer(1)))] }
        stack.below.calls = []
        log.entries = []
        // The half below answers the passkey by encrypting the link: the core hears it in the same turn.
        stack.below.answers = [.event(.securityChanged(Self.a, .high, keySize: 16))]
        stack.respondToPairing(Self.a, .passkey(123456), now: .zero)
        stack.perform([.requestSecurity(Self.b, .medium, reason: .insufficientEncryption)], now: .zero)
        #expect(stack.below.calls == [
            "respond \(Self.a) \(PairingUserAnswer.passkey(123456))", "flush",
            "request security \(Self.b) medium \(ATTError.insufficientEncryption)", "flush",
        ])
        #expect(stack.core.connections[Self.a]?.security == .high)
        #expect(log.entries == ["event security \(Self.a) high", "turn end", "turn end"])
    }

    /// On the H4 host: the user's acceptance reaches the Security Manager, which answers the
    /// central's Pairing Request only then (Vol 3 Part H §3.5.2).
    @Test func theH4HostAnswersAPairingRequestOnceTheUserAccepts() throws {
        var security = SecurityManagerConfiguration()
        security.confirmPairing = true
        var t = HostSecurityTests.connected(security)
        #expect(t.exchange(.pairingRequest(t.central.features)).isEmpty, "the host waits for the user")
        #expect(t.h.events.contains { if case .pairing(0x40, .pairingRequest) = $0 { true } else { false } })
        let before = t.h.sentPayloads(handle: 0x40, channel: .smp).count
        t.h.take(t.h.host.respondToPairing(0x40, .accept, now: t.h.now))
        let answer = t.h.sentPayloads(handle: 0x40, channel: .smp).dropFirst(before).compactMap { try? SMPCommand(decoding: $0) }
        #expect(answer.count == 1 && answer.first.flatMap(SecureHarness.response) != nil, "Pairing Response: \(answer)")
    }

    @Test func anEventTheShellDoesNotAdmitNeverReachesTheCoreAndTheRestGoOnInOrder() {
        let (stack, log) = Self.stack()
        var asked: [String] = []
        stack.admits = { e in
            asked.append("\(e)")
            if case .connected(Self.a, _) = e { return false }
            return true
        }
        // Both ways in: routed from the half below, and reported to the stack.
        stack.callBelow(now: .zero) { _ in [.event(.connected(Self.a, Self.peer(1))), .event(.connected(Self.b, Self.peer(2)))] }
        stack.handle(.connected(Self.c, Self.peer(3)), now: .zero)
        #expect(asked.count == 3)
        #expect(log.entries == ["event connected \(Self.b)", "turn end", "event connected \(Self.c)", "turn end"])
        #expect(stack.core.connections[Self.a] == nil)
    }

    @Test func oneDeadlineForBothHalvesAndTickRunsBoth() {
        let (stack, _) = Self.stack()
        #expect(stack.nextDeadline == nil)
        stack.below.deadline = .seconds(40)
        #expect(stack.nextDeadline == .seconds(40))
        // Indications on (CCCD 0x0013); an indication waits for its confirmation: the ATT transaction timeout (30 s) is earlier.
        stack.callBelow(now: .zero) { _ in
            [.event(.connected(Self.a, Self.peer(1))), .event(.readyToSend(.fixed(Self.a))), .event(.received(.fixed(Self.a), [0x12, 0x15, 0x00, 0x02, 0x00]))]
        }
        stack.perform(stack.core.notify(characteristic: ATTFixture.notify, value: [1], now: .seconds(1)).1, now: .seconds(1))
        stack.handle(.readyToSend(.fixed(Self.a)), now: .seconds(1))
        #expect(stack.nextDeadline == .seconds(31))
        stack.below.calls = []
        stack.tick(now: .seconds(31))
        #expect(stack.below.calls == ["tick", "disconnect \(Self.a)", "flush"], "the half below first, then the core's timeout")
    }
}

/// What the stack made happen, in order (a class: the stack's callbacks append to it).
final class Log {
    var entries: [String] = []
}

/// A half below the seam that records every call and answers with scripted outputs.
struct ScriptedBelow: BelowSeam {
    enum Output: Equatable {
        case event(TransportEvent)
        case fatal(String)
    }
    var calls: [String] = []
    /// What successive flushes give back.
    var flushes: [[Output]] = []
    /// What `respondToPairing` gives back.
    var answers: [Output] = []
    var deadline: Duration?

    static func route(_ output: Output) -> BelowSeamRoute {
        switch output {
        case .event(let e): .core(e)
        case .fatal(let m): .fatal(reason: m)
        }
    }

    mutating func send(_ pdu: [UInt8], on id: BearerID) { calls.append("send \(id) opcode \(pdu.first ?? 0)") }
    mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Output] {
        calls.append("close \(id)")
        return []
    }
    mutating func flush(now: Duration) -> [Output] {
        calls.append("flush")
        return flushes.isEmpty ? [] : flushes.removeFirst()
    }
    mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Output] {
        calls.append("advertise \(sets.map(\.id))")
        return []
    }
    mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Output] {
        calls.append("disconnect \(id)")
        return []
    }
    mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Output] {
        calls.append("request security \(id) \(level) \(reason)")
        return []
    }
    mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Output] {
        calls.append("respond \(id) \(answer)")
        defer { answers = [] }
        return answers
    }
    mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Output] {
        calls.append("request link \(id) \(request)")
        return []
    }
    mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Output] {
        calls.append("cancel link request \(id) \(kind)")
        return []
    }
    mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Output] { [] }
    mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Output] { [] }
    mutating func setBonds(_ bonds: [Bond]) { calls.append("bonds \(bonds.count)") }
    mutating func setLocalIRK(_ irk: [UInt8]) { calls.append("irk") }
    mutating func setEnhancedATT(_ enabled: Bool) { calls.append("eatt \(enabled)") }
    mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) { calls.append("l2cap servers \(servers.count)") }
    mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [Output] {
        calls.append("configure")
        return []
    }
    mutating func tick(now: Duration) -> [Output] {
        calls.append("tick")
        return []
    }
    var nextDeadline: Duration? { deadline }
}
