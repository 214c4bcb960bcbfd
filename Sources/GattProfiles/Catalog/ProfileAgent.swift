/// What runs a profile instance while gattd runs: it drives the daemon only through control
/// requests and events (`ControlConnection`). Confined to the event loop.
protocol ProfileAgent: AnyObject {
    func start()
    /// Ends everything it runs (sessions, timers, connections).
    func stop()
}
