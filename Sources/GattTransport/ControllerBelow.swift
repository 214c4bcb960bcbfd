import GattCore
import GattHost

/// The half below the seam of the daemon's stack (`PeripheralStack<ControllerBelow>`), for
/// every transport: the H4 host's value itself (`H4Host`), run here on the daemon's one loop,
/// timer and clock, its shell only moving packets (`HostShell`); or a transport that still
/// runs its own rules (the kernel's, bluetoothd's: `SelfDrivenTransport`), which is called.
/// Its outputs are the host's (a self-driven transport reports through `onEvent` instead).
public struct ControllerBelow: BelowSeam {
    public typealias Output = HostOutput

    /// The H4 host, when this is an H4 link (else nil).
    public private(set) var h4: H4Host?
    /// The shell that moves the H4 host's packets (performs its outputs, feeds it what it reads).
    public let hostShell: (any HostShell)?
    private let calls: (any SelfDrivenTransport)?

    /// The H4 host, run here; `shell` performs its outputs.
    public init(h4: H4Host, shell: any HostShell) {
        self.h4 = h4
        self.hostShell = shell
        self.calls = nil
    }

    /// A transport that runs its own rules: every call goes to it.
    public init(calls transport: any SelfDrivenTransport) {
        self.h4 = nil
        self.hostShell = nil
        self.calls = transport
    }

    public static func route(_ output: HostOutput) -> BelowSeamRoute { Host.route(output) }

    /// A call on the H4 host (its shell's reads and channel calls; the start of a link).
    public mutating func runHost(now: Duration, _ call: (inout H4Host, Duration) -> [HostOutput]) -> [HostOutput] {
        guard h4 != nil else { return [] }
        return call(&h4!, now)
    }

    // MARK: - BelowSeam

    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) {
        if let calls { return calls.send(pdu, on: bearer) }
        h4!.host.send(pdu, on: bearer)
    }
    public mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [HostOutput] {
        if let calls { calls.closeEnhancedBearer(id); return [] }
        return h4!.host.closeEnhancedBearer(id, now: now)
    }
    public mutating func flush(now: Duration) -> [HostOutput] {
        if let calls { calls.flush(); return [] }
        return h4!.host.flush(now: now)
    }
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [HostOutput] {
        if let calls { calls.setAdvertising(sets); return [] }
        return h4!.host.setAdvertising(sets, now: now)
    }
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [HostOutput] {
        if let calls { calls.disconnect(id, reason: reason); return [] }
        return h4!.host.disconnect(id, reason: reason, now: now)
    }
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [HostOutput] {
        if let calls { calls.requestSecurity(id, level: level, reason: reason); return [] }
        return h4!.host.requestSecurity(id, level: level, reason: reason, now: now)
    }
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [HostOutput] {
        if let calls { calls.respondToPairing(id, answer); return [] }
        return h4!.host.respondToPairing(id, answer, now: now)
    }
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [HostOutput] {
        if let calls { calls.requestLink(id, request); return [] }
        return h4!.host.requestLink(id, request, now: now)
    }
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [HostOutput] {
        if let calls { calls.cancelLinkRequest(id, kind); return [] }
        return h4!.host.cancelLinkRequest(id, kind, now: now)
    }
    public mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [HostOutput] {
        calls?.answerGATT(id, result)
        return []
    }
    public mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [HostOutput] {
        calls?.updateGATT(handle, value)
        return []
    }
    public mutating func tick(now: Duration) -> [HostOutput] {
        guard calls == nil else { return [] }
        return h4!.host.tick(now: now)
    }
    /// The H4 host's (read in place); a self-driven transport keeps its own timers.
    public var nextDeadline: Duration? {
        mutating get { calls == nil ? h4!.host.nextDeadline : nil }
    }

    // MARK: - What the daemon keeps below the seam (bonds, keys, settings)

    /// The bonds to encrypt reconnecting centrals with.
    public mutating func setBonds(_ bonds: [Bond]) {
        if let calls { return calls.setBonds(bonds) }
        h4!.setBonds(bonds)
    }
    /// Our Identity Resolving Key (before the first link).
    public mutating func setLocalIRK(_ irk: [UInt8]) {
        if let calls { return calls.setLocalIRK(irk) }
        h4!.setLocalIRK(irk)
    }
    /// Accept Enhanced ATT bearers or refuse them (new channels; open ones stay).
    public mutating func setEnhancedATT(_ enabled: Bool) {
        if let calls { return calls.setEnhancedATT(enabled) }
        h4!.setEnhancedATT(enabled)
    }
    /// Accept LE credit-based channels to exactly these servers.
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        if let calls { return calls.setL2CAPChannelServers(servers) }
        h4!.setL2CAPChannelServers(servers)
    }
    /// Reload: the new config's transport settings.
    public mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [HostOutput] {
        if let calls { calls.configure(configuration); return [] }
        return h4!.configure(configuration, now: now)
    }
}

/// The I/O shell of a transport whose sans-I/O half runs in the daemon's stack (H4: it reads
/// and writes the controller's packets). Called on the transport's event loop.
public protocol HostShell: AnyObject {
    /// Set by whoever runs the stack, before `open`: runs a call on the host in a turn of the
    /// stack (a packet read, a channel's call, the start of a link).
    var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)? { get set }
    /// One output of the host, in order: a packet to write, a channel event, a warning, a
    /// fatal error (the stack has told the core `.lost` already).
    func perform(_ output: HostOutput)
}
