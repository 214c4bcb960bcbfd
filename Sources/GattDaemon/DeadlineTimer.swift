import NIOCore

/// The daemon's one timer, for both halves of its stack: armed for the stack's next deadline
/// after every turn, and re-armed only when that deadline changed (most turns leave it as it
/// was: no cancel and schedule per request). Confined to `eventLoop`.
final class DeadlineTimer: @unchecked Sendable {
    private let eventLoop: any EventLoop
    /// The clock's zero: deadlines are durations since it.
    private let origin: ContinuousClock.Instant
    private let fire: () -> Void
    private var task: Scheduled<Void>?
    /// The deadline `task` is armed for.
    private var deadline: Duration?

    /// `fire` runs on `eventLoop` when an armed deadline comes; deadlines count from `origin`.
    init(eventLoop: any EventLoop, origin: ContinuousClock.Instant, fire: @escaping () -> Void) {
        self.eventLoop = eventLoop
        self.origin = origin
        self.fire = fire
    }

    /// Fires at `deadline` (the clock is read only when the timer is re-armed); nil: never.
    func arm(at deadline: Duration?) {
        if deadline == self.deadline, task != nil || deadline == nil { return }
        task?.cancel()
        task = nil
        self.deadline = deadline
        guard let deadline else { return }
        task = eventLoop.scheduleTask(in: TimeAmount(max(.zero, deadline - (ContinuousClock.now - origin)))) { [self] in
            task = nil
            self.deadline = nil
            fire()
        }
    }

    func cancel() { arm(at: nil) }
}
