#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOCore

/// When the daemon hands clean file pages back (`StartupPages`): a little after it first
/// advertises, after a reload, and after the last central's disconnection unless a central
/// connected since. Confined to the daemon's event loop.
final class CleanPageRelease: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private let logger: Logger
    /// Start-up's pages wait for the first advertising.
    private var startupHeld = true
    private var scheduled: Scheduled<Void>?
    /// What the scheduled hand-back asks first (nil: nothing).
    private var idleCheck: (() -> Bool)?

    init(eventLoop: any EventLoop, logger: Logger) {
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Advertising started: the first time, start-up's pages go.
    func advertisingStarted() {
        guard startupHeld else { return }
        startupHeld = false
        schedule()
    }

    /// Hands them back after `StartupPages.delay`; `stillIdle`, when given, is asked then (no
    /// central connected since the last one left).
    func schedule(stillIdle: (() -> Bool)? = nil) {
        scheduled?.cancel()
        idleCheck = stillIdle
        scheduled = eventLoop.scheduleTask(in: StartupPages.delay) { [weak self] in
            guard let self else { return }
            self.scheduled = nil
            if let check = self.idleCheck, !check() { return }
            StartupPages.release(logger: self.logger)
        }
    }
}
