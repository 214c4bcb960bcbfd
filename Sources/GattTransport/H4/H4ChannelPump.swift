import DequeModule
import GattCore
import GattHost
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// The program side of the H4 host's credit-based channels: each channel is a
/// socketpair(AF_UNIX, SOCK_SEQPACKET) — one end goes up with `.l2capChannelOpened`, this
/// pumps the other, one message per SDU, with backpressure both ways:
/// - central → program: an SDU is written into the pair and its credits go back to the
///   central only once the write succeeded (`consumed`); on EAGAIN the SDU (and the ones
///   behind it) wait for POLLOUT, and the central gets no credits meanwhile;
/// - program → central: our end is read only while the host invited the channel
///   (`.ready`: the last SDU left and the central gave credits), one SDU per invitation,
///   so the program's writes fill the pair and block or return EAGAIN.
/// The program closing its end disconnects the channel (`close`); the channel closing
/// (central, rule broken, link dropped) closes our end: the program reads the SDUs still
/// in the pair, then EOF. Confined to `eventLoop`; fds are watched by a `SocketPoller`.
final class H4ChannelPump: @unchecked Sendable {
    /// The host's inputs, called on the event loop.
    struct HostCalls {
        var send: (CreditBasedChannelID, [UInt8]) -> Void
        var consumed: (CreditBasedChannelID) -> Void
        var close: (CreditBasedChannelID) -> Void
        var warning: (String) -> Void
        /// `.ready` as soon as the channel's SDUs have left, credits or not (`Host.readyWhenSent`).
        var readyWhenSent: (CreditBasedChannelID) -> Void
    }

    private struct Pipe {
        let fd: Int32
        let peerMTU: Int
        /// SDUs from the central not written into the pair yet (EAGAIN), oldest first.
        var unwritten: Deque<[UInt8]> = []
        /// The channel is gone from the host, but `unwritten` still goes to the program
        /// (the central sent it: "send the file, then disconnect" must not lose its tail).
        var closing = false
        /// An SDU of the program's is on its way to the central (read, no `.ready` since):
        /// the program's hang-up waits for it (closing now would drop it).
        var sending = false
    }

    private let eventLoop: any EventLoop
    private let calls: HostCalls
    private var poller: SocketPoller?
    private var pipes: [CreditBasedChannelID: Pipe] = [:]
    /// The programs' ends of the opened channels, until the daemon takes them.
    private var programEnds = ChannelSockets()

    init(eventLoop: any EventLoop, calls: HostCalls) {
        self.eventLoop = eventLoop
        self.calls = calls
    }

    /// Routes one host event; returns the program's end for `.opened` (nil: refused, closed).
    func handle(_ event: CreditBasedChannelEvent) -> L2CAPChannelOpened? {
        switch event {
        case .opened(let id, let server, let psm, let peerMTU, let mtu):
            guard let socket = open(id, peerMTU: peerMTU, mtu: mtu) else { return nil }
            return L2CAPChannelOpened(server: server, psm: psm, peerMTU: peerMTU, mtu: mtu, ticket: programEnds.keep(socket))
        case .received(let id, let sdu): received(sdu, on: id)
        case .ready(let id):
            guard let pipe = pipes[id], !pipe.closing else { break }
            pipes[id]!.sending = false
            poller?.setReading(pipe.fd, true)
        case .closed(let id, _): closed(id)
        }
        return nil
    }

    /// Every channel's end closes (the controller was lost or the transport closes).
    func closeAll() {
        for id in Array(pipes.keys) { forget(id) }
    }

    /// The program's end of an opened channel, handed over (`PeripheralTransport.takeL2CAPChannel`).
    func take(_ ticket: L2CAPChannelTicket) -> Int32? {
        programEnds.take(ticket)
    }

    /// Closes every channel's end (and the program ends nobody took) and stops the poll
    /// thread, off the event loop (its shutdown joins the thread).
    func shutdown() {
        for socket in programEnds.removeAll() { _ = Glibc.close(socket) }
        closeAll()
        guard let poller else { return }
        self.poller = nil
        NIOThreadPool.singleton.submit { _ in poller.shutdown() }
    }

    private func open(_ id: CreditBasedChannelID, peerMTU: Int, mtu: Int) -> Int32? {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else {
            fail(id, "socketpair: \(String(cString: strerror(errno)))")
            return nil
        }
        // Room for a full SDU and a little more (the kernel doubles it for its bookkeeping):
        // a program that writes faster than the central takes blocks soon.
        var size = Int32(max(mtu, peerMTU) + 4096)
        for fd in fds { _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if poller == nil {
            do {
                poller = try SocketPoller()
            } catch {
                for fd in fds { Glibc.close(fd) }
                fail(id, "\(error)")
                return nil
            }
        }
        guard let poller else { return nil }
        let ours = fds[0]
        pipes[id] = Pipe(fd: ours, peerMTU: peerMTU)
        // Not read until the host invites the channel (`.ready`, right after `.opened`).
        poller.setReading(ours, false)
        poller.watch(ours) { [self, poller] in
            poller.setReading(ours, false)  // one SDU per invitation
            eventLoop.execute { self.readable(id, fd: ours) }
            return true
        }
        watchHangUp(id, fd: ours)
        return fds[1]
    }

    private func fail(_ id: CreditBasedChannelID, _ why: String) {
        calls.warning("\(id): cannot hand the channel to a program (\(why)); disconnecting it")
        calls.close(id)
    }

    /// The host closed the channel: our end closes once what the central sent is written.
    private func closed(_ id: CreditBasedChannelID) {
        guard let pipe = pipes[id] else { return }
        guard !pipe.unwritten.isEmpty else { return forget(id) }
        pipes[id]!.closing = true
        poller?.setReading(pipe.fd, false)
    }

    /// Our end closes; the channel is gone from the host already.
    private func forget(_ id: CreditBasedChannelID) {
        guard let pipe = pipes.removeValue(forKey: id) else { return }
        poller?.unwatch(pipe.fd, closing: true)
    }

    // MARK: Central → program

    private func received(_ sdu: [UInt8], on id: CreditBasedChannelID) {
        guard pipes[id] != nil else { return }
        pipes[id]!.unwritten.append(sdu)
        writeUnwritten(id)
    }

    /// Writes the waiting SDUs in order; each one written gives its credits back.
    private func writeUnwritten(_ id: CreditBasedChannelID) {
        while let pipe = pipes[id], let sdu = pipe.unwritten.first {
            let n = sdu.withUnsafeBytes { Glibc.send(pipe.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS {
                poller?.whenWritable(pipe.fd) { [self] in eventLoop.execute { self.writeUnwritten(id) } }
                return
            }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                // EPIPE, ECONNRESET: the program closed its end.
                return pipe.closing ? forget(id) : programClosed(id)
            }
            pipes[id]?.unwritten.removeFirst()
            if pipe.closing {
                if pipes[id]?.unwritten.isEmpty ?? true { forget(id) }
            } else {
                calls.consumed(id)
            }
        }
    }

    // MARK: Program → central

    private func readable(_ id: CreditBasedChannelID, fd: Int32) {
        guard let pipe = pipes[id], pipe.fd == fd, !pipe.closing else { return }
        var buffer = [UInt8](repeating: 0, count: pipe.peerMTU)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_TRUNC)) }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return poller?.setReading(fd, true) ?? () }
            return programClosed(id)
        }
        if n == 0, Self.hungUp(fd) { return programClosed(id) }
        if n > pipe.peerMTU {
            // MSG_TRUNC: the message's real length. Not an SDU the central takes.
            calls.warning("\(id): the program wrote \(n) bytes, more than the central's MTU \(pipe.peerMTU); dropped")
            return poller?.setReading(fd, true) ?? ()
        }
        // The host invites the channel again (`.ready`) once this SDU left and credits remain.
        // Meanwhile the program is not read, but its leaving is noticed (a central that gives
        // no credits must not keep a channel whose program is gone).
        pipes[id]!.sending = true
        calls.send(id, Array(buffer[..<n]))
    }

    private func watchHangUp(_ id: CreditBasedChannelID, fd: Int32) {
        poller?.whenHungUp(fd) { [self] in eventLoop.execute { self.programHungUp(id, fd: fd) } }
    }

    /// The program hung up, perhaps while it was not read (no credits from the central):
    /// with nothing of its on the way and nothing left to read, the channel ends now. What it
    /// wrote before leaving still goes first, as credits come (then EOF ends the channel):
    /// from now on `.ready` comes as soon as each SDU has left, even one that took the
    /// central's last credit, so the read after the last one finds the end (this handler
    /// runs once).
    private func programHungUp(_ id: CreditBasedChannelID, fd: Int32) {
        guard let pipe = pipes[id], pipe.fd == fd, !pipe.closing else { return }
        if !pipe.sending, Self.hungUp(fd) { return programClosed(id) }
        calls.readyWhenSent(id)
    }

    /// A zero-length read is EOF when the peer hung up or shut its sending side down and
    /// nothing more is queued (else an empty message, an empty SDU; one that is the very last
    /// thing before the program's close cannot be told from the close).
    private static func hungUp(_ fd: Int32) -> Bool {
        // The peer's close shuts both directions of an AF_UNIX socket (POLLHUP); its
        // shutdown(SHUT_WR) only ours for reading (POLLRDHUP, no POLLHUP).
        var p = pollfd(fd: fd, events: Int16(POLLIN) | SocketPoller.pollReadHangUp, revents: 0)
        guard poll(&p, 1, 0) > 0, p.revents & (Int16(POLLHUP) | Int16(POLLERR) | SocketPoller.pollReadHangUp) != 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// The program closed its end: the channel is disconnected.
    private func programClosed(_ id: CreditBasedChannelID) {
        forget(id)
        calls.close(id)
    }
}
