/// The kernel transport's adapter, as one state machine (sans I/O): `KernelPeripheralTransport`
/// asks it what to do at each open, completion, adapter event and close, and does it.
///
/// Each open starts a new session; work started in a session (the open itself, advertising
/// operations, a key load) is current only while that session is opening or ready, so a
/// completion that comes back after the adapter went (or gattd closed) is dropped.
struct KernelAdapterLifecycle: Equatable {
    enum State: Equatable {
        /// Not opened yet, or the last open failed: `open` tries.
        case idle
        /// Being brought up on the command thread.
        case opening(session: Int)
        /// Controller open, listening on the ATT channel.
        case ready(session: Int)
        /// Went down or was removed: `open` waits for it to come back (registered or up).
        case away
        /// `close` was called: for good.
        case closed
    }

    private(set) var state: State = .idle
    /// The last session started.
    private var sessions = 0

    /// What `open` does.
    enum OpenDecision: Equatable {
        /// Bring the adapter up in this session.
        case start(session: Int)
        /// Opening or open already (or closed): nothing to do.
        case nothing
        /// The adapter is down or gone: wait for it.
        case away
    }

    mutating func open() -> OpenDecision {
        switch state {
        case .idle:
            sessions += 1
            state = .opening(session: sessions)
            return .start(session: sessions)
        case .away: return .away
        case .opening, .ready, .closed: return .nothing
        }
    }

    /// The bring-up of `session` succeeded: true when it is still wanted (now ready), false
    /// when the adapter went or gattd closed meanwhile (close what it opened).
    mutating func opened(session: Int) -> Bool {
        guard state == .opening(session: session) else { return false }
        state = .ready(session: session)
        return true
    }

    /// The bring-up of `session` failed (or what it opened could not be used): `open` tries
    /// again (unless the adapter went or gattd closed meanwhile).
    mutating func openFailed(session: Int) {
        if state == .opening(session: session) { state = .idle }
    }

    /// What losing the adapter ends.
    enum Loss: Equatable {
        /// It was not open (idle, away already): nothing to drop.
        case nothing
        /// It was being brought up: the bring-up is forgotten.
        case opening
        /// It was open: its centrals and sockets go, and the daemon hears `.lost`.
        case ready
    }

    /// The adapter went down or was removed: wait for it (nil once closed: ignored).
    mutating func lost() -> Loss? {
        let loss: Loss
        switch state {
        case .closed: return nil
        case .idle, .away: loss = .nothing
        case .opening: loss = .opening
        case .ready: loss = .ready
        }
        state = .away
        return loss
    }

    /// Whether an open that found its session gone should wait for the adapter to come back
    /// (it is away) or try again now: it went and came back while the bring-up ran, and the
    /// daemon, told of it while still opening, will hear of it no more (kernel VM, btvirt -l2:
    /// gattd bringing hci0 up saw it down and up before its own bring-up finished).
    var waitsForAdapter: Bool { state == .away }

    /// The adapter was registered or came up: true when `open` may now try (tell the daemon).
    mutating func appeared() -> Bool {
        switch state {
        case .idle, .away:
            state = .idle
            return true
        case .opening, .ready, .closed:
            return false
        }
    }

    /// gattd closes the transport: true when the adapter was open (its instances come off the air).
    mutating func close() -> Bool {
        let wasReady = isReady
        state = .closed
        return wasReady
    }

    var isReady: Bool {
        if case .ready = state { return true }
        return false
    }

    /// The session work started now belongs to (nil when none is opening or ready).
    var session: Int? {
        switch state {
        case .opening(let s), .ready(let s): s
        case .idle, .away, .closed: nil
        }
    }

    /// Whether work started in `session` still counts (its session is opening or ready).
    func isCurrent(_ session: Int?) -> Bool {
        session != nil && self.session == session
    }

    /// Whether the adapter is ready in `session` (and has not gone and come back since).
    func isReady(in session: Int?) -> Bool {
        session != nil && state == .ready(session: session!)
    }

    var isClosed: Bool { state == .closed }
}
