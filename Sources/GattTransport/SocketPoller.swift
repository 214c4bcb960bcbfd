import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Watches sockets with poll(2) on one dedicated thread: the kernel transport's (L2CAP
/// ATT listener and bearers, raw HCI monitor sockets) and the H4 transport's ends of its
/// credit-based channels' socket pairs, whose input it may pause (`setReading`).
///
/// Why not a NIO channel: NIO's selectors are not public API, and `NIOPipeBootstrap`
/// (the one way to hand NIO a foreign fd) treats the fd as a byte stream. Reads would
/// keep SOCK_SEQPACKET boundaries (one read = one packet) as long as the receive buffer
/// is never smaller than a packet, but its pending-writes machinery gathers queued
/// writes into one `writev`, which on a SOCK_SEQPACKET socket sends ONE packet: two ATT
/// PDUs written back to back could leave as a single malformed PDU. So the kernel
/// transport reads on this thread and hands every packet to the owner's `EventLoop`
/// with `execute`; writes are plain non-blocking `send`s from the caller's thread.
///
/// Handlers run on the poll thread: they read one packet and dispatch it. The poller
/// owns the closing of every fd it watched (``unwatch(_:closing:)``), so an fd number is
/// never reused while the poll thread may still look at it.
public final class SocketPoller: Sendable {
    /// Called on the poll thread when the fd is readable or has an error/hang-up.
    /// Returns false to stop watching the fd (the poller then closes it).
    public typealias Handler = @Sendable () -> Bool

    private struct State {
        var handlers: [Int32: Handler] = [:]
        /// One-shot handlers for "fd is writable again" (POLLOUT).
        var writable: [Int32: @Sendable () -> Void] = [:]
        /// One-shot handlers for "the peer hung up", polled even while input is paused.
        var hangUp: [Int32: @Sendable () -> Void] = [:]
        /// Watched fds whose input is not polled for now.
        var paused: Set<Int32> = []
        var toClose: [Int32] = []
        var stopping = false
    }

    private let state = Mutex(State())
    /// A pipe: writing a byte to `wakeWriteFD` makes poll() return to pick up changes.
    private let wakeFD: Int32
    private let wakeWriteFD: Int32
    private let thread: NIOThreadPool

    /// The poll thread could not be set up (its wake-up pipe): `errno` and what failed.
    public struct SetupError: Error, Sendable, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "pipe: \(errnoDescription(errno))" }
    }

    public init() throws(SetupError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SetupError(errno: errno) }
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        self.wakeFD = ends[0]
        self.wakeWriteFD = ends[1]
        self.thread = NIOThreadPool(numberOfThreads: 1)
        self.thread.start()
        self.thread.submit { [self] _ in self.run() }
    }

    /// Starts watching `fd` for input. `handler` runs on the poll thread.
    public func watch(_ fd: Int32, handler: @escaping Handler) {
        state.withLock { $0.handlers[fd] = handler }
        wake()
    }

    /// Runs `handler` once on the poll thread when `fd` (already watched for input) becomes
    /// writable or has an error. Replaces an earlier writable handler of `fd`.
    public func whenWritable(_ fd: Int32, handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.writable[fd] = handler }
        wake()
    }

    /// Runs `handler` once on the poll thread when the peer of `fd` (already watched) hangs up
    /// or shuts its sending side down (POLLHUP, POLLRDHUP, POLLERR), even while its input is
    /// paused. Replaces an earlier hang-up handler of `fd`.
    public func whenHungUp(_ fd: Int32, handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.hangUp[fd] = handler }
        wake()
    }

    /// POLLRDHUP (Linux; Glibc exports it only with _GNU_SOURCE).
    static let pollReadHangUp: Int16 = 0x2000

    /// Pauses (false) or resumes (true) polling a watched fd for input; a paused fd is
    /// still polled for `whenWritable`, and its handler is not called.
    public func setReading(_ fd: Int32, _ reading: Bool) {
        state.withLock { state in
            if reading { state.paused.remove(fd) } else { state.paused.insert(fd) }
        }
        wake()
    }

    /// Stops watching `fd`; with `closing`, the poll thread closes it once it no longer polls it.
    public func unwatch(_ fd: Int32, closing: Bool) {
        state.withLock { state in
            state.handlers[fd] = nil
            state.writable[fd] = nil
            state.hangUp[fd] = nil
            state.paused.remove(fd)
            if closing { state.toClose.append(fd) }
        }
        wake()
    }

    /// Stops the poll thread and closes every fd still watched. Do not call it from a handler.
    public func shutdown() {
        state.withLock { $0.stopping = true }
        wake()
        try? thread.syncShutdownGracefully()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)
    }

    private func run() {
        var pollFDs: [pollfd] = []
        while true {
            let (fds, writers, hangUps, paused, closes, stopping) = state.withLock { state in
                let closes = state.toClose
                state.toClose.removeAll()
                return (Array(state.handlers.keys), Set(state.writable.keys), Set(state.hangUp.keys), state.paused, closes, state.stopping)
            }
            for fd in closes { close(fd) }
            if stopping {
                let remaining = state.withLock { state in
                    defer {
                        state.handlers.removeAll()
                        state.writable.removeAll()
                        state.hangUp.removeAll()
                        state.paused.removeAll()
                    }
                    return Array(state.handlers.keys)
                }
                for fd in remaining { close(fd) }
                close(wakeFD)
                close(wakeWriteFD)
                return
            }
            pollFDs.removeAll(keepingCapacity: true)
            pollFDs.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            for fd in fds {
                let events = (paused.contains(fd) ? 0 : Int16(POLLIN)) | (writers.contains(fd) ? Int16(POLLOUT) : 0)
                    | (hangUps.contains(fd) ? Self.pollReadHangUp : 0)
                // Nothing asked of a paused fd: not polled at all (a hang-up would wake poll in a
                // loop; a hang-up handler is one-shot).
                if events != 0 { pollFDs.append(pollfd(fd: fd, events: events, revents: 0)) }
            }
            let ready = poll(&pollFDs, nfds_t(pollFDs.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                // Cannot happen with valid fds; do not spin.
                usleep(10_000)
                continue
            }
            if pollFDs[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeFD, &drain, drain.count) > 0 {}
            }
            for entry in pollFDs.dropFirst() where entry.revents != 0 {
                if entry.revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0,
                    let writer = state.withLock({ $0.writable.removeValue(forKey: entry.fd) })
                {
                    writer()
                }
                if entry.revents & (Int16(POLLERR | POLLHUP) | Self.pollReadHangUp) != 0,
                    let hungUp = state.withLock({ $0.hangUp.removeValue(forKey: entry.fd) })
                {
                    hungUp()
                }
                guard entry.revents & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0 else { continue }
                guard let handler = state.withLock({ $0.paused.contains(entry.fd) ? nil : $0.handlers[entry.fd] }) else { continue }
                if !handler() {
                    state.withLock { state in
                        state.writable[entry.fd] = nil
                        state.hangUp[entry.fd] = nil
                        state.paused.remove(entry.fd)
                        if state.handlers.removeValue(forKey: entry.fd) != nil { state.toClose.append(entry.fd) }
                    }
                }
            }
        }
    }
}
