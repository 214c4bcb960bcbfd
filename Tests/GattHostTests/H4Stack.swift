@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// What the host tests see: the H4 host's events and the peripheral core's, as one list.
enum StackEvent: Equatable {
    case controllerReady(ControllerInfo)
    case advertisingChanged(Bool)
    /// A set besides the primary one went on or off the air.
    case setChanged(String, Bool)
    case connected(HostConnection)
    case disconnected(HostConnection, reason: HCIStatus)
    case att(ATTServerEvent)
    case warning(String)
    case fatal(String)
    case pairing(UInt16, SecurityManagerEvent)
    /// A credit-based L2CAP channel of the H4 host (the transport's, not the core's).
    case channel(CreditBasedChannelEvent)
    case linkRequestFinished(UInt16, LinkRequestKind, LinkRequestResult)
}

enum StackOutput: Equatable {
    case send(H4Packet)
    case event(StackEvent)
}

/// The H4 host below the seam and the peripheral core above it, in the composition the daemon
/// runs: `PeripheralStack<H4Host>`, its shell wired by `attachShell`.
/// This shell records what it is handed as `StackOutput`s (packets as the host makes them, the
/// core's events as the tests name them); each call the tests make on the host goes through
/// the shell's `runHost` at the time they give, as the daemon's shell's reads do. The host
/// tests drive the whole H4 path through it, PDU by PDU.
struct H4Stack {
    let stack: PeripheralStack<H4Host>
    private let recorder: Recorder

    init(configuration: HostConfiguration, att: ATTServer, payloads: AdvertisingPayloads, otherSets: [AdvertisingSet] = []) {
        let recorder = Recorder()
        self.recorder = recorder
        stack = PeripheralStack(
            core: Peripheral(
                database: att.database, payloads: payloads, otherSets: otherSets, maxConnections: configuration.advertising.maxConnections,
                att: att.configuration),
            below: H4Host(host: configuration))
        stack.attachShell(recorder) { recorder.now }
        stack.onEvent = { [unowned stack] e in
            if case .linkChanged(let c) = e { recorder.links.append(LinkReport(handle: c.handle ?? c.id.rawValue, link: c.link)) }
            recorder.outputs += Self.translate(e, connections: stack.below.host.connections).map { .event($0) }
        }
    }

    /// Every `.linkChanged` the core reported, in order.
    var linkReports: [LinkReport] {
        get { recorder.links }
        nonmutating set { recorder.links = newValue }
    }

    var host: Host {
        get { stack.below.host }
        nonmutating _modify { yield &stack.below.host }
    }
    var core: Peripheral {
        get { stack.core }
        nonmutating _modify { yield &stack.core }
    }

    // MARK: The old Host surface the tests use

    var att: ATTServer { core.att }
    var connections: [UInt16: HostConnection] { host.connections }
    var controller: ControllerInfo { host.controller }
    var configuration: HostConfiguration { host.configuration }
    var isReady: Bool { host.isReady }
    var hasFailed: Bool { host.hasFailed }
    var isAdvertising: Bool { core.isAdvertising }
    var advertisingEnabled: Bool { core.advertisingWanted }
    var isIdle: Bool { host.isIdle && core.isIdle }
    var randomAddress: BluetoothAddress { host.randomAddress }
    var advertisedAddress: BluetoothAddress { host.advertisedAddress }
    var nextDeadline: Duration? { stack.nextDeadline }
    func supports(_ command: HCICommand) -> Bool { host.supports(command) }

    mutating func start(payloads: AdvertisingPayloads, now: Duration) -> [StackOutput] {
        call({ h, now in h.start(now: now) }, now: now)
    }
    mutating func receive(_ packet: H4Packet, now: Duration) -> [StackOutput] {
        call({ h, now in h.receive(packet, now: now) }, now: now)
    }
    mutating func tick(now: Duration) -> [StackOutput] { record { stack.tick(now: now) } }

    mutating func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID? = nil, now: Duration) -> (NotifyResult, [StackOutput]) {
        let (r, o) = core.notify(characteristic: characteristic, value: value, only: only, now: now)
        return (r, perform(o, now))
    }
    mutating func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool { core.setValue(characteristic: characteristic, value: value) }
    mutating func respond(to id: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [StackOutput] {
        perform(try core.respond(to: id, result: result, now: now), now)
    }
    mutating func setDeferredAccessAvailable(_ available: Bool) { _ = core.setDeferredAccessAvailable(available, now: .zero) }
    mutating func failDeferredAccesses(now: Duration) -> [StackOutput] {
        perform(core.setDeferredAccessAvailable(false, now: now), now)
    }
    mutating func setAdvertising(_ enabled: Bool, set: String? = nil, now: Duration) -> [StackOutput] {
        perform(core.setAdvertisingWanted(enabled, set: set), now)
    }
    mutating func disconnect(_ handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection, now: Duration) -> [StackOutput] {
        guard core.connections[ConnectionID(handle)] != nil else { return [] }
        return call({ h, now in h.disconnect(ConnectionID(handle), reason: reason, now: now) }, now: now)
    }
    /// The user's answer to a pairing prompt on `handle`.
    mutating func respondToPairing(_ handle: UInt16, _ answer: PairingUserAnswer, now: Duration) -> [StackOutput] {
        record { stack.respondToPairing(ConnectionID(handle), answer, now: now) }
    }
    mutating func shutdown(now: Duration) -> [StackOutput] { perform(core.shutdown(), now) }

    /// A call into the host that the transport makes (e.g. a credit-based channel's inputs),
    /// through the shell's `runHost`, in a turn of the stack at `now`.
    mutating func call(_ body: (inout Host, Duration) -> [HostOutput], now: Duration) -> [StackOutput] {
        record {
            recorder.now = now
            recorder.runHost!({ h, now in body(&h.host, now) })
        }
    }

    // MARK: Recording

    private func perform(_ outputs: [PeripheralOutput], _ now: Duration) -> [StackOutput] {
        record {
            recorder.now = now
            stack.perform(outputs, now: now)
        }
    }

    /// What `body` made the stack do.
    private func record(_ body: () -> Void) -> [StackOutput] {
        let before = recorder.outputs.count
        body()
        let out = Array(recorder.outputs[before...])
        if before == 0 { recorder.outputs = [] } else { recorder.outputs.removeSubrange(before...) }
        return out
    }

    private static func translate(_ e: PeripheralEvent, connections: [UInt16: HostConnection]) -> [StackEvent] {
        func hc(_ c: PeripheralConnection) -> HostConnection {
            HostConnection(handle: c.handle ?? c.id.rawValue, peerAddress: c.address, peerAddressType: c.addressType, security: c.security)
        }
        switch e {
        case .advertisingChanged(let on, let set) where set == AdvertisingSet.primaryID: return [.advertisingChanged(on)]
        case .advertisingChanged(let on, let set): return [.setChanged(set, on)]
        case .advertisingRefused(let whileConnected, let reason, _):
            return [.warning(whileConnected ? "the controller refused to advertise while connected (\(reason)); advertising resumes after a disconnection" : "advertising refused: \(reason)")]
        case .connected(let c): return [.connected(hc(c))]
        case .disconnected(let c, let reason, _): return [.disconnected(hc(c), reason: reason)]
        case .att(let a, _): return [.att(a)]
        case .pairing(let c, let e): return [.pairing(c.id.rawValue, e)]
        case .warning(let m): return [.warning(m)]
        case .controllerReady, .controllerLost, .securityChanged, .reloaded, .l2capChannel, .linkChanged: return []
        case .linkRequestFinished(let c, let kind, let result): return [.linkRequestFinished(c.handle ?? c.id.rawValue, kind, result)]
        }
    }
}

/// The H4 host's shell in the tests: it records the outputs of the running `H4Stack` call
/// (a class: the stack's callbacks append to it) and gives the stack the tests' time.
private final class Recorder: HostShell {
    var outputs: [StackOutput] = []
    var links: [LinkReport] = []
    /// The time of the running call (the stack's clock).
    var now: Duration = .zero
    var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)?

    func perform(_ o: HostOutput) {
        switch o {
        case .send(let p): outputs.append(.send(p))
        case .event(.controllerReady(let i)): outputs.append(.event(.controllerReady(i)))
        case .event(.warning(let m)): outputs.append(.event(.warning(m)))
        case .event(.fatal(let m)): outputs.append(.event(.fatal(m)))
        case .event(.channel(let e)): outputs.append(.event(.channel(e)))
        case .event(.transport): break
        }
    }
}

/// A `.linkChanged` the core reported (kept apart from the events most tests compare).
struct LinkReport: Equatable {
    var handle: UInt16
    var link: LinkParameters
}
