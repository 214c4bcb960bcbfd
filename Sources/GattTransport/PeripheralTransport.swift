import GattCore
import NIOCore

/// The seam between the peripheral core (`Peripheral`, above) and a way to reach a
/// controller (below): the H4 host (`H4PeripheralTransport`), the Linux kernel's stack
/// (`KernelPeripheralTransport`) or bluetoothd (`BlueZPeripheralTransport`). A transport moves
/// ATT PDUs, reports connections, security and advertising (`TransportEvent`s), advertises what
/// it is asked to, and nothing else: everything they share lives once, above it.
///
/// This is the transport's shell: its life (open, close, probe), its resources (sockets) and
/// where its events go. The calls of the seam itself are the daemon stack's half below it,
/// `ControllerBelow` (`makeBelow`): the H4 host's value, run on the daemon's loop, or the
/// calls of a transport that still runs its own rules (`SelfDrivenTransport`).
///
/// Every member is called on, and every event delivered on, `eventLoop`.
public protocol PeripheralTransport: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// Where events go (set before `open`).
    var onEvent: ((TransportEvent) -> Void)? { get set }
    /// Called when a transport that waits for its controller sees it come back
    /// (`TransportOpenFailure.Retry.whenAvailable`): open it now.
    var onAvailable: (() -> Void)? { get set }
    /// The half below the seam the daemon's stack runs for this transport (made once, before `open`).
    func makeBelow(configuration: GattConfiguration) -> ControllerBelow
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

/// A transport that runs its own rules in its object (the kernel's, bluetoothd's) rather than
/// as a value in the daemon's stack: the stack's half below the seam calls it
/// (`ControllerBelow(calls:)`), and it reports what follows through `onEvent`.
public protocol SelfDrivenTransport: PeripheralTransport {
    /// One ATT PDU on a bearer, after a `.readyToSend` for it; it may wait for `flush`.
    func send(_ pdu: [UInt8], on bearer: BearerID)
    /// Closes an Enhanced ATT bearer's channel (L2CAP Disconnection Request); the link stays.
    func closeEnhancedBearer(_ id: BearerID)
    /// Accept Enhanced ATT bearers (when `supportsEnhancedATT`) or refuse them; called before
    /// `open` and on every reload (bearers already open stay).
    func setEnhancedATT(_ enabled: Bool)
    /// Sends what `send` queued (the stack calls it once it has performed a batch of outputs).
    func flush()
    /// Advertise exactly these sets (by `AdvertisingSet.id`), stop the others;
    /// `.advertisingChanged` / `.advertisingRefused` report each set's result.
    func setAdvertising(_ sets: [AdvertisingSet])
    func disconnect(_ id: ConnectionID, reason: HCIStatus)
    /// Ask the central to pair or encrypt (SMP Security Request), where the transport can.
    func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError)
    /// The user's answer to a `.pairing` prompt on `id` (passkey, comparison, acceptance).
    func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer)
    /// A program's request for one link (new connection parameters); `.linkRequestFinished`
    /// reports how it ended (a transport that cannot: refused at once, with the reason).
    func requestLink(_ id: ConnectionID, _ request: LinkRequest)
    /// The program stopped waiting for its `kind` request on `id`: a late answer answers nothing.
    func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind)
    /// The bonds to encrypt reconnecting centrals with (loaded from the bond store at
    /// start; the transport adds the bonds its own pairings complete).
    func setBonds(_ bonds: [Bond])
    /// Our Identity Resolving Key (kept by the daemon in the state directory): distributed to
    /// bonding centrals and used for our resolvable private addresses. Called before `open`.
    func setLocalIRK(_ irk: [UInt8])
    /// The answer to a `.gattAccess` this transport reported (one that runs ATT itself:
    /// bluetoothd); the others report none and ignore it.
    func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>)
    /// A new value for the subscribers of a characteristic this transport reported
    /// `.gattSubscribers` for; the others report none and ignore it.
    func updateGATT(_ handle: AttributeHandle, _ value: [UInt8])
    /// Accept LE credit-based channels to exactly these servers (the ones a program listens
    /// for); a PSM not listed is refused (LE_PSM not supported). Channels already open stay.
    /// Each accepted channel comes up as `.l2capChannelOpened`.
    func setL2CAPChannelServers(_ servers: [L2CAPChannelServer])
    /// Reload: the new config's transport settings (random address, preferred parameters).
    func configure(_ configuration: GattConfiguration)
}

extension SelfDrivenTransport {
    /// Its rules run in it: the stack calls it.
    public func makeBelow(configuration: GattConfiguration) -> ControllerBelow { ControllerBelow(calls: self) }
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
