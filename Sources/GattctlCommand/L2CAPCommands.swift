import ArgumentParser
import GattControlProtocol
import GattCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `gattctl l2cap …`: app L2CAP channels (Core Bluetooth's publishL2CAPChannel).
struct L2CAP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "l2cap",
        abstract: "Serve, bridge, list and publish app L2CAP channels.",
        subcommands: [L2CAPServe.self, L2CAPCat.self, L2CAPList.self, L2CAPPublish.self, L2CAPUnpublish.self]
    )
}

struct L2CAPServe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a command for each channel a central opens (inetd style).",
        discussion: """
            Listens for the channel ID (from the config's "l2cap_channels" or published) and, \
            for each channel a central opens, runs `/bin/sh -c CMD` with the channel as its \
            stdin and stdout: each read returns one SDU, each write sends one (at most the \
            central's MTU). Commands run side by side, one per channel. Variables set:

              GATTD_CENTRAL        the central's address
              GATTD_L2CAP_CHANNEL  the channel's id
              GATTD_PSM            its PSM
              GATTD_MTU            the largest SDU gattd takes
              GATTD_PEER_MTU       the largest SDU the central takes

                gattctl l2cap serve stream --exec cat     # an echo server
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String
    @Option(help: ArgumentHelp("The command, run by /bin/sh -c for each channel.", valueName: "cmd")) var exec: String
    @Flag(help: "Print nothing on stderr per channel.") var quiet = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            signal(SIGPIPE, SIG_IGN)
            let client = try global.connect()
            let channel = try L2CAPListening.listen(client, id)
            StandardStream.error("gattctl: serving L2CAP channel \"\(id)\" (PSM \(channel.psm)) with: \(exec)\n")
            // gattctl keeps each channel's socket while its command runs, then until what the
            // command wrote has left it: closing the socket ends the channel, and the kernel
            // drops what still waits for the central's credits.
            var running: [pid_t: Int32] = [:]
            var draining: [Int32] = []
            while true {
                for pid in Self.reap() {
                    if let socket = running.removeValue(forKey: pid) { draining.append(socket) }
                }
                draining.removeAll { socket in
                    guard ChannelSendQueue.isDone(socket) else { return false }
                    close(socket)
                    return true
                }
                guard let (event, socket) = try L2CAPListening.next(client, timeout: .seconds(1)) else { continue }
                if !quiet { StandardStream.error("gattctl: \(event.central) opened \"\(id)\" (MTU \(event.peerMTU))\n") }
                L2CAPListening.makeBlocking(socket)
                do throws(GattctlFailure) {
                    let pid = try Subprocess.spawn(exec, stdio: socket, environment: [
                        "GATTD_CENTRAL": event.central, "GATTD_L2CAP_CHANNEL": id, "GATTD_PSM": String(event.psm),
                        "GATTD_MTU": String(event.mtu), "GATTD_PEER_MTU": String(event.peerMTU),
                    ])
                    running[pid] = socket
                } catch {
                    StandardStream.error("gattctl: \(error.message)\n")
                    close(socket)
                }
            }
        }
    }

    /// Collects finished commands (no zombies); returns their pids.
    static func reap() -> [pid_t] {
        var status: Int32 = 0
        var done: [pid_t] = []
        while true {
            let pid = waitpid(-1, &status, WNOHANG)
            guard pid > 0 else { return done }
            done.append(pid)
        }
    }
}

struct L2CAPCat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Bridge the next channel a central opens to stdin and stdout.",
        discussion: """
            Waits for a central to open the channel ID, then copies stdin to it (in SDUs of at \
            most the central's MTU) and what it receives to stdout, until the central closes \
            it. At the end of stdin the channel is closed once what was written has left \
            gattd's socket (the central's credits let it go), or when the central closes it.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            signal(SIGPIPE, SIG_IGN)
            let client = try global.connect()
            let channel = try L2CAPListening.listen(client, id)
            StandardStream.error("gattctl: waiting for a central to open \"\(id)\" (PSM \(channel.psm))\n")
            var opened: (ControlL2CAPChannelEvent, Int32)?
            while opened == nil { opened = try L2CAPListening.next(client, timeout: nil) }
            let (event, socket) = opened!
            _ = try? client.request(.l2capUnlisten(channel: id))
            StandardStream.error("gattctl: \(event.central) opened \"\(id)\" (MTU \(event.peerMTU))\n")
            L2CAPListening.makeBlocking(socket)
            try L2CAPListening.bridge(socket, sduLimit: event.peerMTU, receiveLimit: event.mtu)
        }
    }
}

struct L2CAPList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the app L2CAP channels.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard case .l2capChannels(let list) = try global.connect().expectOK(.listL2CAPChannels) else {
                throw .reply("gattd's reply has no channels")
            }
            for c in list {
                var parts = [c.id, "psm=\(c.psm)", "security=\(c.security.rawValue)", "mtu=\(c.mtu)"]
                if let n = c.listeners { parts.append("listeners=\(n)") }
                parts.append(c.runtime ? "published" : "config")
                emit(parts.joined(separator: "  "))
            }
        }
    }
}

struct L2CAPPublish: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish", abstract: "Publish a channel while gattd runs (gattd picks the PSM unless --psm).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String
    @Option(help: "The PSM (1-255; default: a dynamic one gattd picks and keeps).") var psm: Int?
    @Option(help: "none, encryption or authentication.") var security = "none"
    @Option(help: "The largest SDU gattd takes (23-65535).") var mtu = 2048

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            var members: [(String, JSONText)] = [("id", .string(id))]
            if let psm { members.append(("psm", .int(psm))) }
            members += [("security", .string(security)), ("mtu", .int(mtu))]
            let json: JSONValue
            do { json = try JSONParser.parse(Array(JSONText.object(members).text.utf8)) } catch { throw .usage("\(error)") }
            guard case .l2capChannel(let c) = try global.connect().expectOK(.publishL2CAPChannel(channel: json)) else {
                throw .reply("gattd's reply has no channel")
            }
            emit("\(c.id)  psm=\(c.psm)")
        }
    }
}

struct L2CAPUnpublish: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpublish", abstract: "Unpublish a channel published while gattd runs.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel's id.") var id: String

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            try global.connect().expectOK(.unpublishL2CAPChannel(id: id))
        }
    }
}

/// An `l2cap_channel` event's fields.
typealias ControlL2CAPChannelEvent = (central: String, psm: UInt16, mtu: Int, peerMTU: Int)

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
