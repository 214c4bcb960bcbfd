import GattCore
import GattHost

/// The half below the seam of the daemon's stack (`PeripheralStack<ControllerBelow>`), for
/// every transport: the H4 host's value itself (`H4Host`), run here on the daemon's one loop,
/// timer and clock, its shell only moving packets (`HostShell`); or a transport that still
/// runs its own rules (the kernel's, bluetoothd's: `SelfDrivenTransport`), which is called.
/// Its outputs are the host's (a self-driven transport reports through `onEvent` instead).
public struct ControllerBelow: BelowSeam {
    public typealias Output = HostOutput

    /// The H4 host, when this is an H4 link (else nil). Private: reading it copies the host;
    /// calls reach it in place (`runHost`, the seam's members).
    private var h4: H4Host?
    /// The shell that moves the H4 host's packets (performs its outputs, feeds it what it reads).
    public let hostShell: (any HostShell)?
    /// A transport that runs its own rules (else nil).
    private var calls: (any SelfDrivenTransport)?

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
        // (Not `h4 != nil`: that copies the host.)
        guard calls == nil else { return [] }
        return call(&h4!, now)
    }

    // MARK: - BelowSeam: to the H4 host, or the transport (whose outputs are none)

    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) {
        if calls != nil { return calls!.send(pdu, on: bearer) }
        h4!.host.send(pdu, on: bearer)
    }
    public mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.closeEnhancedBearer(id, now: now); return [] }
        return h4!.host.closeEnhancedBearer(id, now: now)
    }
    public mutating func flush(now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.flush(now: now); return [] }
        return h4!.host.flush(now: now)
    }
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.setAdvertising(sets, now: now); return [] }
        return h4!.host.setAdvertising(sets, now: now)
    }
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.disconnect(id, reason: reason, now: now); return [] }
        return h4!.host.disconnect(id, reason: reason, now: now)
    }
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.requestSecurity(id, level: level, reason: reason, now: now); return [] }
        return h4!.host.requestSecurity(id, level: level, reason: reason, now: now)
    }
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.respondToPairing(id, answer, now: now); return [] }
        return h4!.host.respondToPairing(id, answer, now: now)
    }
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.requestLink(id, request, now: now); return [] }
        return h4!.host.requestLink(id, request, now: now)
    }
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.cancelLinkRequest(id, kind, now: now); return [] }
        return h4!.host.cancelLinkRequest(id, kind, now: now)
    }
    public mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.answerGATT(id, result, now: now); return [] }
        return h4!.host.answerGATT(id, result, now: now)
    }
    public mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.updateGATT(handle, value, now: now); return [] }
        return h4!.host.updateGATT(handle, value, now: now)
    }
    public mutating func tick(now: Duration) -> [HostOutput] {
        if calls != nil { return [] }
        return h4!.host.tick(now: now)
    }
    /// The H4 host's (read in place); a self-driven transport keeps its own timers.
    public var nextDeadline: Duration? {
        mutating get {
            guard calls == nil else { return nil }
            return Self.nextDeadline(of: &h4!.host)
        }
    }
    /// Read in place: a getter called on the stored host copies the whole `Host` first.
    private static func nextDeadline(of host: inout Host) -> Duration? { host.nextDeadline }
    public mutating func setBonds(_ bonds: [Bond]) {
        if calls != nil { return calls!.setBonds(bonds) }
        h4!.setBonds(bonds)
    }
    public mutating func setLocalIRK(_ irk: [UInt8]) {
        if calls != nil { return calls!.setLocalIRK(irk) }
        h4!.setLocalIRK(irk)
    }
    public mutating func setEnhancedATT(_ enabled: Bool) {
        if calls != nil { return calls!.setEnhancedATT(enabled) }
        h4!.setEnhancedATT(enabled)
    }
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        if calls != nil { return calls!.setL2CAPChannelServers(servers) }
        h4!.setL2CAPChannelServers(servers)
    }
    public mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [HostOutput] {
        if calls != nil { _ = calls!.configure(configuration, now: now); return [] }
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
