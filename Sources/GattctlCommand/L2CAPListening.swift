import ArgumentParser
import GattControlProtocol
import GattCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `serve` and `cat` share: listening, taking each channel's socket, bridging.
enum L2CAPListening {
    static func listen(_ client: ControlClient, _ id: String) throws(GattctlFailure) -> ControlL2CAPChannel {
        guard case .l2capChannel(let c) = try client.expectOK(.l2capListen(channel: id)) else {
            throw .reply("gattd's reply has no channel")
        }
        return c
    }

    /// The next channel opened (its event and socket); nil on timeout.
    static func next(_ client: ControlClient, timeout: Duration?) throws(GattctlFailure) -> (ControlL2CAPChannelEvent, Int32)? {
        guard let message = try client.readMessage(timeout: timeout, answering: "l2cap_listen") else { return nil }
        guard case .event(.l2capChannel(_, let psm, let central, let mtu, let peerMTU)) = message else { return nil }
        guard let socket = client.takeDescriptor() else { throw .reply("gattd sent an l2cap_channel event without its socket") }
        return ((central, psm, mtu, peerMTU), socket)
    }

    static func makeBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    }

    /// stdin → channel (SDUs of at most `sduLimit` bytes), channel → stdout, until the channel closes.
    static func bridge(_ socket: Int32, sduLimit: Int, receiveLimit: Int) throws(GattctlFailure) {
        var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
        var input = [UInt8](repeating: 0, count: max(1, sduLimit))
        var sdu = [UInt8](repeating: 0, count: max(receiveLimit, 65536))
        var stdinOpen = true
        while true {
            fds[0].fd = stdinOpen ? 0 : -1
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                throw .reply("poll: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 {
                let n = sdu.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n < 0 || (n == 0 && ChannelSendQueue.hungUp(socket)) { return }  // closed by the central (or gattd)
                try writeAll(1, sdu, n)  // an empty SDU writes nothing
            }
            if stdinOpen, fds[0].revents != 0 {
                let n = input.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 {
                    stdinOpen = false
                    // Closing now would end the channel with what waits for the central's
                    // credits still queued (the kernel drops it): relay until it has left.
                    drain(socket, into: &sdu)
                    close(socket)
                    return
                }
                // One SDU per read: blocks while the central gives no credits.
                let sent = input.withUnsafeBytes { write(socket, $0.baseAddress, n) }
                if sent < 0 { throw .reply("the channel: \(String(cString: strerror(errno)))") }
            }
        }
    }

    /// After the end of stdin: copies the channel to stdout until our socket's send queue is
    /// empty or the channel closes.
    private static func drain(_ socket: Int32, into sdu: inout [UInt8]) {
        var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while !ChannelSendQueue.isEmpty(socket) {
            // No event says "sent": look again every 50 ms, or as soon as something arrives.
            let ready = poll(&fd, 1, 50)
            if ready < 0, errno != EINTR { return }
            guard ready > 0 else { continue }
            if fd.revents & Int16(POLLIN) != 0 {
                let n = sdu.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n < 0 || (n == 0 && ChannelSendQueue.hungUp(socket)) { return }  // the channel closed
                guard (try? writeAll(1, sdu, n)) != nil else { return }
            } else if fd.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                return
            }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ count: Int) throws(GattctlFailure) {
        var offset = 0
        while offset < count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, count - offset) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { throw .reply("stdout: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }
}
