import ArgumentParser
import GattControlProtocol
import GattCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A channel socket's send queue: what was written and has not left it yet. The kernel's
/// AF_BLUETOOTH sockets answer TIOCOUTQ with the FREE room (sk_sndbuf - wmem; bt_sock_ioctl),
/// so empty is free room = SO_SNDBUF; AF_UNIX sockets (the H4 transport's socket pairs)
/// answer with the bytes their peer has not read yet.
enum ChannelSendQueue {
    /// Bytes still queued (0: all gone); nil when the socket does not say.
    static func pending(_ socket: Int32) -> Int? {
        #if os(Linux)
        var queued: Int32 = 0
        guard ioctl(socket, UInt(TIOCOUTQ), &queued) == 0 else { return nil }
        var domain: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 else { return nil }
        guard domain == 31 else { return Int(queued) }  // AF_BLUETOOTH
        var sendBuffer: Int32 = 0
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_SNDBUF, &sendBuffer, &length) == 0 else { return nil }
        return max(0, Int(sendBuffer) - Int(queued))
        #else
        return nil
        #endif
    }

    /// True when nothing waits in the send queue, or the socket cannot tell (not a socket,
    /// closed: then waiting would never end).
    static func isEmpty(_ socket: Int32) -> Bool {
        (pending(socket) ?? 0) == 0
    }

    /// After a zero-length read: true when it was the end (the other side hung up or shut its
    /// sending side down and nothing more is queued), false for an empty SDU. An empty SDU that
    /// is the very last thing before the close cannot be told from the close.
    static func hungUp(_ socket: Int32) -> Bool {
        var fd = pollfd(fd: socket, events: Int16(POLLIN) | Int16(0x2000), revents: 0)  // POLLRDHUP
        guard poll(&fd, 1, 0) > 0, fd.revents & (Int16(POLLHUP | POLLERR | POLLNVAL) | Int16(0x2000)) != 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(socket, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// `serve`: a socket whose command has exited can be closed: its queue is empty, or the
    /// channel is gone (hung up or failed).
    static func isDone(_ socket: Int32) -> Bool {
        if isEmpty(socket) { return true }
        var fd = pollfd(fd: socket, events: 0, revents: 0)
        return poll(&fd, 1, 0) > 0 && fd.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }
}
