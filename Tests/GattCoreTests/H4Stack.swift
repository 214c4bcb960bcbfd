import DequeModule
@testable import GattCore

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
}

enum StackOutput: Equatable {
    case send(H4Packet)
    case event(StackEvent)
}

/// The H4 host below the seam and the peripheral core above it, wired together the way
/// the daemon wires them: packets go out as the host makes them; transport events queue
/// and feed the core in order; the core's outputs call the host. The host tests drive
/// the whole H4 path through it, PDU by PDU.
struct H4Stack {
    var host: Host
    var core: Peripheral
    private var pending: Deque<TransportEvent> = []
    private var draining = false

    init(configuration: HostConfiguration, att: ATTServer, payloads: AdvertisingPayloads, otherSets: [AdvertisingSet] = []) {
        host = Host(configuration: configuration)
        core = Peripheral(
            database: att.database, payloads: payloads, otherSets: otherSets, maxConnections: configuration.advertising.maxConnections,
            att: att.configuration)
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
    var nextDeadline: Duration? { [host.nextDeadline, core.nextDeadline].compactMap { $0 }.min() }
    func supports(_ command: HCICommand) -> Bool { host.supports(command) }

    mutating func start(payloads: AdvertisingPayloads, now: Duration) -> [StackOutput] { run(host.start(now: now), now) }
    mutating func receive(_ packet: H4Packet, now: Duration) -> [StackOutput] { run(host.receive(packet, now: now), now) }
    mutating func tick(now: Duration) -> [StackOutput] { run(host.tick(now: now), now) + perform(core.tick(now: now), now) }

    mutating func notify(characteristic: Int, value: [UInt8], only: ConnectionID? = nil, now: Duration) -> (NotifyResult, [StackOutput]) {
        let (r, o) = core.notify(characteristic: characteristic, value: value, only: only, now: now)
        return (r, perform(o, now))
    }
    mutating func setValue(characteristic: Int, value: [UInt8]) -> Bool { core.setValue(characteristic: characteristic, value: value) }
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
        return run(host.disconnect(ConnectionID(handle), reason: reason, now: now), now)
    }
    mutating func shutdown(now: Duration) -> [StackOutput] { perform(core.shutdown(), now) }

    /// A call into the host that the transport makes (e.g. a credit-based channel's inputs).
    mutating func call(_ body: (inout Host, Duration) -> [HostOutput], now: Duration) -> [StackOutput] { run(body(&host, now), now) }

    // MARK: Wiring

    /// Host outputs: packets at once, transport events queued for the core.
    private mutating func run(_ outputs: [HostOutput], _ now: Duration) -> [StackOutput] {
        var out: [StackOutput] = []
        for o in outputs {
            switch o {
            case .send(let p): out.append(.send(p))
            case .event(.transport(let e)): pending.append(e)
            case .event(.controllerReady(let i)): out.append(.event(.controllerReady(i)))
            case .event(.warning(let m)): out.append(.event(.warning(m)))
            case .event(.channel(let e)): out.append(.event(.channel(e)))
            case .event(.fatal(let m)):
                // The transport drops the controller: the core loses every connection.
                out.append(.event(.fatal(m)))
                pending.append(.lost(reason: m))
            }
        }
        return out + drain(now)
    }

    private mutating func drain(_ now: Duration) -> [StackOutput] {
        var out: [StackOutput] = []
        guard !draining else { return [] }
        draining = true
        defer { draining = false }
        while let e = pending.popFirst() {
            if case .warning(let m) = e {
                out.append(.event(.warning(m)))
                continue
            }
            out += perform(core.handle(e, now: now), now)
        }
        return out
    }

    /// Core outputs: host calls, and the core's events as the tests name them.
    private mutating func perform(_ outputs: [PeripheralOutput], _ now: Duration) -> [StackOutput] {
        var out: [StackOutput] = []
        for o in outputs {
            switch o {
            case .send(let id, let pdu): host.send(pdu, on: id)
            case .setAdvertising(let sets): out += run(host.setAdvertising(sets, now: now), now)
            case .disconnect(let id, let reason): out += run(host.disconnect(id, reason: reason, now: now), now)
            case .requestSecurity(let id, _, _): out += run(host.requestSecurity(id, now: now), now)
            case .event(let e): out += Self.translate(e, connections: host.connections).map { .event($0) }
            }
        }
        return out + run(host.flush(now: now), now)
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
        case .controllerReady, .controllerLost, .securityChanged, .reloaded, .l2capChannel: return []
        }
    }
}
