import GattCore
import GattHost

/// The half below the seam of the daemon's stack (`PeripheralStack<ControllerBelow>`), for
/// every transport: a transport's sans-I/O value itself, run here on the daemon's one loop,
/// timer and clock, its shell only moving bytes and events — the H4 host (`H4Host`, its shell
/// `HostShell`) or the kernel's rules (`KernelAdapter`, its shell `KernelShell`); or a transport
/// that runs ATT itself and reports through `onEvent` (bluetoothd's: `SelfDrivenTransport`).
public struct ControllerBelow: BelowSeam {
    public typealias Output = BelowOutput

    private enum Kind { case h4, kernel, calls }
    private let below: Kind
    /// The H4 host, when this is an H4 link (else nil). Not public: reading it copies the host;
    /// calls reach it in place (`runHost`, the seam's members). The host tests reach it here.
    internal var h4: H4Host?
    /// The shell that moves the H4 host's packets (performs its outputs, feeds it what it reads).
    public let hostShell: (any HostShell)?
    /// The kernel's rules, when this is the kernel transport (else nil).
    private var kernel: KernelAdapter?
    /// The kernel transport's shell (sockets, poll thread, mgmt I/O).
    public let kernelShell: (any KernelShell)?
    /// A transport that runs its own rules (else nil).
    private var calls: (any SelfDrivenTransport)?

    /// The H4 host, run here; `shell` performs its outputs.
    public init(h4: H4Host, shell: any HostShell) {
        self.below = .h4
        self.h4 = h4
        self.hostShell = shell
        self.kernelShell = nil
    }

    /// The kernel's rules, run here; `shell` performs their actions.
    public init(kernel: KernelAdapter, shell: any KernelShell) {
        self.below = .kernel
        self.kernel = kernel
        self.hostShell = nil
        self.kernelShell = shell
    }

    /// A transport that runs its own rules: every call goes to it.
    public init(calls transport: any SelfDrivenTransport) {
        self.below = .calls
        self.hostShell = nil
        self.kernelShell = nil
        self.calls = transport
    }

    public static func route(_ output: BelowOutput) -> BelowSeamRoute {
        switch output {
        case .host(let o): Host.route(o)
        case .kernel(let o): KernelAdapter.route(o)
        }
    }

    /// The shell that performs `output`.
    public func perform(_ output: BelowOutput) {
        switch output {
        case .host(let o): hostShell?.perform(o)
        case .kernel(let o): kernelShell?.perform(o)
        }
    }

    /// A call on the H4 host (its shell's reads and channel calls; the start of a link).
    public mutating func runHost(now: Duration, _ call: (inout H4Host, Duration) -> [HostOutput]) -> [BelowOutput] {
        guard below == .h4 else { return [] }
        return Self.wrap(call(&h4!, now))
    }

    /// A call on the kernel's rules (what the shell read or the kernel answered).
    public mutating func runKernel(now: Duration, _ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> [BelowOutput] {
        guard below == .kernel else { return [] }
        return Self.wrap(call(&kernel!, now))
    }

    private static func wrap(_ o: [HostOutput]) -> [BelowOutput] { o.isEmpty ? [] : o.map(BelowOutput.host) }
    private static func wrap(_ o: [KernelOutput]) -> [BelowOutput] { o.isEmpty ? [] : o.map(BelowOutput.kernel) }

    // MARK: - BelowSeam: to the H4 host, the kernel's rules, or the transport (whose outputs are none)

    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) {
        switch below {
        case .h4: h4!.host.send(pdu, on: bearer)
        case .kernel: kernel!.send(pdu, on: bearer)
        case .calls: calls!.send(pdu, on: bearer)
        }
    }
    public mutating func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.closeEnhancedBearer(id, now: now))
        case .kernel: return Self.wrap(kernel!.closeEnhancedBearer(id, now: now))
        case .calls:
            _ = calls!.closeEnhancedBearer(id, now: now)
            return []
        }
    }
    public mutating func flush(now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.flush(now: now))
        case .kernel: return Self.wrap(kernel!.flush(now: now))
        case .calls:
            _ = calls!.flush(now: now)
            return []
        }
    }
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.setAdvertising(sets, now: now))
        case .kernel: return Self.wrap(kernel!.setAdvertising(sets, now: now))
        case .calls:
            _ = calls!.setAdvertising(sets, now: now)
            return []
        }
    }
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.disconnect(id, reason: reason, now: now))
        case .kernel: return Self.wrap(kernel!.disconnect(id, reason: reason, now: now))
        case .calls:
            _ = calls!.disconnect(id, reason: reason, now: now)
            return []
        }
    }
    public mutating func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.requestSecurity(id, level: level, reason: reason, now: now))
        case .kernel: return Self.wrap(kernel!.requestSecurity(id, level: level, reason: reason, now: now))
        case .calls:
            _ = calls!.requestSecurity(id, level: level, reason: reason, now: now)
            return []
        }
    }
    public mutating func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.respondToPairing(id, answer, now: now))
        case .kernel: return Self.wrap(kernel!.respondToPairing(id, answer, now: now))
        case .calls:
            _ = calls!.respondToPairing(id, answer, now: now)
            return []
        }
    }
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.requestLink(id, request, now: now))
        case .kernel: return Self.wrap(kernel!.requestLink(id, request, now: now))
        case .calls:
            _ = calls!.requestLink(id, request, now: now)
            return []
        }
    }
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.cancelLinkRequest(id, kind, now: now))
        case .kernel: return Self.wrap(kernel!.cancelLinkRequest(id, kind, now: now))
        case .calls:
            _ = calls!.cancelLinkRequest(id, kind, now: now)
            return []
        }
    }
    public mutating func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.answerGATT(id, result, now: now))
        case .kernel: return Self.wrap(kernel!.answerGATT(id, result, now: now))
        case .calls:
            _ = calls!.answerGATT(id, result, now: now)
            return []
        }
    }
    public mutating func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.host.updateGATT(handle, value, now: now))
        case .kernel: return Self.wrap(kernel!.updateGATT(handle, value, now: now))
        case .calls:
            _ = calls!.updateGATT(handle, value, now: now)
            return []
        }
    }
    public mutating func tick(now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: Self.wrap(h4!.host.tick(now: now))
        case .kernel: Self.wrap(kernel!.tick(now: now))
        case .calls: []
        }
    }
    /// The value's deadline (read in place); a self-driven transport keeps its own timers.
    public var nextDeadline: Duration? {
        mutating get {
            switch below {
            case .h4: Self.nextDeadline(of: &h4!.host)
            case .kernel: kernel!.nextDeadline
            case .calls: nil
            }
        }
    }
    /// Read in place: a getter called on the stored host copies the whole `Host` first.
    private static func nextDeadline(of host: inout Host) -> Duration? { host.nextDeadline }
    public mutating func setBonds(_ bonds: [Bond]) {
        switch below {
        case .h4: h4!.setBonds(bonds)
        case .kernel: kernel!.setBonds(bonds)
        case .calls: calls!.setBonds(bonds)
        }
    }
    public mutating func setLocalIRK(_ irk: [UInt8]) {
        switch below {
        case .h4: h4!.setLocalIRK(irk)
        case .kernel: kernel!.setLocalIRK(irk)
        case .calls: calls!.setLocalIRK(irk)
        }
    }
    public mutating func setEnhancedATT(_ enabled: Bool) {
        switch below {
        case .h4: h4!.setEnhancedATT(enabled)
        case .kernel: kernel!.setEnhancedATT(enabled)
        case .calls: calls!.setEnhancedATT(enabled)
        }
    }
    public mutating func setL2CAPChannelServers(_ servers: [L2CAPChannelServer]) {
        switch below {
        case .h4: h4!.setL2CAPChannelServers(servers)
        case .kernel: kernel!.setL2CAPChannelServers(servers)
        case .calls: calls!.setL2CAPChannelServers(servers)
        }
    }
    public mutating func configure(_ configuration: GattConfiguration, now: Duration) -> [BelowOutput] {
        switch below {
        case .h4: return Self.wrap(h4!.configure(configuration, now: now))
        case .kernel: return Self.wrap(kernel!.configure(configuration, now: now))
        case .calls:
            _ = calls!.configure(configuration, now: now)
            return []
        }
    }
}

/// One output of the half below the seam, for the shell of its kind.
public enum BelowOutput: Sendable {
    /// The H4 host's: a packet to write, a host event.
    case host(HostOutput)
    /// The kernel's rules': an action of the kernel transport's shell.
    case kernel(KernelOutput)
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

/// The I/O shell of the kernel transport, whose rules (`KernelAdapter`) run in the daemon's
/// stack: it feeds in what the kernel says and performs their actions. Called on its event loop.
public protocol KernelShell: AnyObject {
    /// Set by whoever runs the stack, before `open`: runs a call on the rules in a turn of the
    /// stack (a socket read, a mgmt event, a command's answer); it runs before this returns.
    var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)? { get set }
    /// One action of the rules, in order (the stack has queued their events for the core).
    func perform(_ output: KernelOutput)
}
