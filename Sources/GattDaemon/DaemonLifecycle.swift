import NIOCore

/// Where `PeripheralDaemon` is in its life: one value, so that "READY=1 sent while stopping"
/// or "a retry scheduled after the transport closed" cannot be written down.
///
/// ```
/// created ─start()→ starting(link) ─first open over→ serving(link) ─stop()→ stopping ─idle or 2 s→ stopped
///                         └──────────────────stop()──────────────────────────↗
/// ```
/// READY=1 goes to systemd on `starting → serving`, whether the controller answered or not.
enum DaemonLifecycle {
    /// `start()` not called yet.
    case created
    /// The first attempt to open the transport is not over; READY=1 not sent yet.
    case starting(TransportLink)
    /// READY=1 sent; serving, or waiting for the controller.
    case serving(TransportLink)
    /// `stop()` called: advertising off and centrals disconnecting (at most 2 s).
    case stopping(EventLoopPromise<Void>)
    /// Shut down: the transport is closed or closing (the promise completes then).
    case stopped(EventLoopPromise<Void>)

    /// The transport's state while starting or serving; nil once stopping.
    var link: TransportLink? {
        switch self {
        case .starting(let l), .serving(let l): l
        case .created, .stopping, .stopped: nil
        }
    }

    /// The same phase with the transport in `link` (only while starting or serving).
    mutating func setLink(_ link: TransportLink) {
        switch self {
        case .starting: self = .starting(link)
        case .serving: self = .serving(link)
        case .created, .stopping, .stopped: break
        }
    }

    var isServing: Bool {
        if case .serving = self { return true }
        return false
    }

    /// `stop()` was called (stopping or stopped).
    var isShuttingDown: Bool {
        switch self {
        case .stopping, .stopped: true
        case .created, .starting, .serving: false
        }
    }
}

/// How the daemon drives the transport while starting or serving.
enum TransportLink {
    /// `open()` is under way.
    case opening
    /// Open: the controller answered (or will say `.ready` soon).
    case open
    /// Opening again after a failure or a lost controller, once the backoff delay is over.
    case retrying(Scheduled<Void>)
    /// The transport says when the controller appears (`onAvailable`: an adapter down or missing).
    case awaitingController

    /// A scheduled retry to cancel when the link changes.
    var retry: Scheduled<Void>? {
        if case .retrying(let task) = self { return task }
        return nil
    }
}
