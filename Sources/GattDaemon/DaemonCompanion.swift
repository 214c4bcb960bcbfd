import NIOCore

/// What runs beside the daemon as a client of its control server, on its event loop: the
/// profiles' agents (GattProfiles' `ProfileRunner`, wired by gattd's command). It drives the
/// daemon only as a program on the control socket would (`ControlServer.connectLocalClient`).
public protocol DaemonCompanion: Sendable {
    /// The daemon and its control server are up.
    func start(control: ControlServer)
    /// A SIGHUP reload of the config was taken (the companion reads what it needs of the
    /// config as the `loadConfig` that reload used left it).
    func reload()
    /// Before the control server stops (`eventLoop`: the daemon's).
    func stop(on eventLoop: any EventLoop) -> EventLoopFuture<Void>
}
