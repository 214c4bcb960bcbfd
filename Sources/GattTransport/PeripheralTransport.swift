import GattCore
import NIOCore

/// The seam between the peripheral core (`Peripheral`, above) and a way to reach a
/// controller (below): the H4 host (`H4PeripheralTransport`), the Linux kernel's stack
/// (`KernelPeripheralTransport`) or bluetoothd (`BlueZPeripheralTransport`). A transport moves
/// ATT PDUs, reports connections, security and advertising (`TransportEvent`s), advertises what
/// it is asked to, and nothing else: everything they share lives once, above it.
///
/// This is the transport's shell: its life (open, close, probe), its resources (sockets) and
/// where its events go. The calls of the seam itself go to the half below it in the daemon's
/// one stack, which the transport makes (`makeStack`): `PeripheralStack<H4Host>` or
/// `PeripheralStack<KernelAdapter>` with this shell wired to the value, or the transport itself
/// when it still runs its own rules (`SelfDrivenTransport`).
///
/// Every member is called on, and every event delivered on, `eventLoop`.
public protocol PeripheralTransport: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// Where events go (set before `open`).
    var onEvent: ((TransportEvent) -> Void)? { get set }
    /// Called when a transport that waits for its controller sees it come back
    /// (`TransportOpenFailure.Retry.whenAvailable`): open it now.
    var onAvailable: (() -> Void)? { get set }
    /// The daemon's stack: `core` over this transport's half below the seam, its shell wired to
    /// it on `clock` (made once, before `open`).
    func makeStack(core: Peripheral, configuration: GattConfiguration, clock: @escaping () -> Duration) -> any PeripheralStackDriving
    /// A config this transport cannot serve, in words; checked at start and on every reload.
    func refusal(of configuration: GattConfiguration) -> String?
    /// Connects to the controller and brings it up; `.ready` follows. Fails with a
    /// `TransportOpenFailure` that says whether and when to try again.
    func open() -> EventLoopFuture<Void>
    /// Whether this transport can accept Enhanced ATT bearers (EATT channels on PSM 0x0027).
    var supportsEnhancedATT: Bool { get }
    /// Unbond: forget `bond` wherever the transport keeps keys besides `setBonds`' set (the
    /// kernel's key lists, bluetoothd's devices); `setBonds` without it follows.
    func removeBond(_ bond: Bond)
    /// The database to serve, for a transport that runs ATT itself and registers it (BlueZ):
    /// called before `open` and whenever it changes; the others serve the core's own PDUs.
    func serveDatabase(_ database: GATTDatabase)
    /// The socket of a channel `.l2capChannelOpened` reported, handed over: the caller owns it
    /// (and closes it). Nil when it was taken already, or the transport closed since.
    func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32?
    /// Closes the transport for good (the daemon stops); no `.lost` follows.
    func close() -> EventLoopFuture<Void>
    /// `gattd --probe`: what the controller is and can do, read without advertising, then the
    /// transport is closed. Instead of `open`, never after it.
    func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe>
}

/// A transport that runs its own rules in its object (bluetoothd's: it runs ATT itself) rather
/// than as a value in the daemon's stack, as the H4 host and the kernel's rules are: it is its own half below the seam, called as any is
/// (`BelowSeam`, declared once), and reports what follows through `onEvent` rather than by
/// returning outputs (it has none). It keeps its own timers.
public protocol SelfDrivenTransport: PeripheralTransport, BelowSeam where Output == Never {}

extension SelfDrivenTransport {
    /// Its rules run in it: the stack calls it, and it has no shell to wire.
    public func makeStack(core: Peripheral, configuration: GattConfiguration, clock: @escaping () -> Duration) -> any PeripheralStackDriving {
        PeripheralStack(core: core, below: self)
    }
    public static func route(_ output: Never) -> BelowSeamRoute {}
    /// Its timers are its own.
    public func tick(now: Duration) -> [Never] { [] }
    public var nextDeadline: Duration? { nil }
}

/// Why a transport could not be opened, and what the daemon should do about it.
public struct TransportOpenFailure: Error, Sendable, CustomStringConvertible {
    public enum Retry: Sendable, Equatable {
        /// Try again with backoff (controller unreachable, transient errors).
        case withBackoff
        /// Wait for `onAvailable` (the adapter is down or missing).
        case whenAvailable
        /// Waiting cannot fix it (bluetoothd running, missing capability): at start the
        /// daemon exits with `exitCode`.
        case never(exitCode: Int32)
    }

    public var message: String
    public var retry: Retry
    public init(_ message: String, retry: Retry) {
        self.message = message
        self.retry = retry
    }
    public var description: String { message }
}
