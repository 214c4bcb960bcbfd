import GattControlProtocol
import GattCore
import GattTransport
import Logging

/// What the daemon's services share and drive (its GATT-level interface): the `Peripheral` core
/// in the daemon's one stack, on the daemon's clock, the log, and the control events watchers
/// get. Each service owns its own state; none reaches into another's (the daemon wires them).
/// Confined to the daemon's event loop.
final class DaemonContext: @unchecked Sendable {
    /// The core on the transport (the transport's `PeripheralStack`).
    let stack: any PeripheralStackDriving
    let logger: Logger
    /// The daemon's clock starts here (the stack's `now`).
    let origin: ContinuousClock.Instant
    /// Where control events go (set by `ControlServer` through the daemon).
    var controlEventHandler: ((ControlEvent) -> Void)?

    init(stack: any PeripheralStackDriving, logger: Logger, origin: ContinuousClock.Instant) {
        self.stack = stack
        self.logger = logger
        self.origin = origin
    }

    var now: Duration { ContinuousClock.now - origin }

    var core: Peripheral {
        get { stack.core }
        _modify { yield &stack.core }
    }

    /// Performs the core's outputs in a turn of the stack (or in the running one).
    func process(_ outputs: [PeripheralOutput]) { stack.perform(outputs, now: now) }

    /// Answers a request the core handed out (`DeferredAccess`); false when it is gone.
    func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool {
        do {
            process(try core.respond(to: request, result: result, now: now))
            return true
        } catch {
            return false
        }
    }

    /// Sends a control event to the watchers.
    func emit(_ event: ControlEvent) { controlEventHandler?(event) }
}
