import Glibc
import NIOCore
import NIOPosix

extension ControlServer {
    /// A client inside gattd (a profile's agent, GattProfiles): one end of a new socket pair is
    /// served exactly as an accepted connection of the control socket; the other end is
    /// returned, for the caller to speak the same protocol on. It does not count against
    /// `maximumClients`.
    public func connectLocalClient() -> EventLoopFuture<CInt> {
        var fds: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            return eventLoop.makeFailedFuture(IOError(errnoCode: errno, reason: "socketpair"))
        }
        let (served, returned) = (fds[0], fds[1])
        return ClientBootstrap(group: eventLoop)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ControlClientHandler(server: self, local: true))
                }
            }
            .withConnectedSocket(served)
            .map { _ in returned }
            .flatMapErrorThrowing { error in
                close(returned)
                throw error
            }
    }
}
