#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import GattControlProtocol
import GattCore

/// Why gattctl gives up, with the message to print and the exit code.
struct GattctlFailure: Error {
    var message: String
    var exitCode: Int32

    /// The daemon answered `{"ok":false,...}` or something unexpected: exit 1.
    static func reply(_ message: String) -> GattctlFailure { GattctlFailure(message: message, exitCode: 1) }
    /// EX_UNAVAILABLE: nobody is listening.
    static func notRunning(_ message: String) -> GattctlFailure { GattctlFailure(message: message, exitCode: 69) }
    /// EX_NOPERM: the socket is there but we may not use it.
    static func permission(_ message: String) -> GattctlFailure { GattctlFailure(message: message, exitCode: 77) }
    /// EX_USAGE: a value that can never be sent.
    static func usage(_ message: String) -> GattctlFailure { GattctlFailure(message: message, exitCode: 64) }
}

/// A blocking newline-delimited-JSON client for gattd's control socket.
final class ControlClient {
    let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var nextID = 1
    /// The `"id"` of the last reply, as gattd echoed it.
    private(set) var lastReplyID: JSONText?

    /// Events that arrive while `request` waits for its reply are kept in `keptEvents`
    /// (else skipped).
    var keepsEvents = false
    var keptEvents: [ControlEvent] = []

    /// How long to wait for the reply to a request.
    static let replyTimeout: Duration = .seconds(10)

    init(path: String) throws(GattctlFailure) {
        self.path = path
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw .usage("--socket \(path): a Unix socket path must be 1 to \(capacity - 1) bytes long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        #if canImport(Darwin)
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
        guard fd >= 0 else { throw .reply("socket(): \(Self.errnoText())") }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let code = errno
            close(fd)
            switch code {
            case ENOENT:
                throw .notRunning("gattd is not running (no socket at \(path))")
            case ECONNREFUSED:
                throw .notRunning("gattd is not running (\(path) exists but nothing is listening)")
            case EACCES, EPERM:
                throw .permission("permission denied: add yourself to the gattd group (\(path))")
            case ENOTSOCK:
                throw .notRunning("\(path) is not a socket; is --socket right?")
            default:
                throw .notRunning("cannot connect to \(path): \(String(cString: strerror(code)))")
            }
        }
        self.fd = fd
    }

    deinit { close(fd) }

    // MARK: - Requests

    /// Sends `command` with a fresh `"id"` and returns the matching reply, skipping any
    /// events that arrive first.
    func request(_ command: ControlCommand) throws(GattctlFailure) -> ControlReply {
        let id = nextID
        nextID += 1
        try send(ControlRequest(id: .rawNumber(String(id)), command: command))
        while true {
            // A link request waits for the central's answer (gattd gives up after 20 s).
            let timeout: Duration = ["connection_parameters", "phy"].contains(command.op) ? .seconds(30) : Self.replyTimeout
            guard let message = try readMessage(timeout: timeout, answering: command.op) else {
                throw .reply("gattd did not answer within \(timeout.components.seconds) s")
            }
            guard case .reply(let reply, let echoed) = message else {
                if keepsEvents, case .event(let e) = message { keptEvents.append(e) }
                continue
            }
            if case .rawNumber(let n)? = echoed, Int(n) != id { continue }
            lastReplyID = echoed
            return reply
        }
    }

    /// Like `request`, but an `{"ok":false}` reply becomes a failure with its message.
    @discardableResult
    func expectOK(_ command: ControlCommand) throws(GattctlFailure) -> ControlReply {
        let reply = try request(command)
        if case .failure(let e) = reply { throw .reply(Self.errorText(e)) }
        return reply
    }

    func send(_ request: ControlRequest) throws(GattctlFailure) {
        var bytes = Array(request.text.utf8)
        bytes.append(0x0A)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Self.sendNoSignal(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .reply("lost the connection to gattd: \(Self.errnoText())")
            }
            offset += n
        }
    }

    /// The next line as text (without "\n"); nil on timeout. Throws when gattd closes
    /// the connection. `timeout` nil waits forever.
    func readLine(timeout: Duration?) throws(GattctlFailure) -> String? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var waitMilliseconds: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return nil }
                let (s, atto) = left.components
                waitMilliseconds = Int32(clamping: s * 1000 + atto / 1_000_000_000_000_000 + 1)
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, waitMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .reply("poll: \(Self.errnoText())")
            }
            if ready == 0 { continue }  // the deadline check above returns nil
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { receive(into: $0) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .reply("lost the connection to gattd: \(Self.errnoText())")
            }
            if n == 0 { throw .reply("gattd closed the connection") }
            buffer += chunk[0..<n]
        }
    }

    /// Descriptors gattd passed (SCM_RIGHTS: an `l2cap_channel` event's socket), oldest first.
    private var descriptors: [Int32] = []

    /// The socket passed with the last `l2cap_channel` event read (they come in order).
    func takeDescriptor() -> Int32? { descriptors.isEmpty ? nil : descriptors.removeFirst() }

    /// recvmsg(2): the bytes, and any descriptors passed along, kept in `descriptors`.
    private func receive(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var control = [UInt8](repeating: 0, count: 512)
        return control.withUnsafeMutableBytes { c in
            var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            return withUnsafeMutablePointer(to: &iov) { iovPointer in
                var message = msghdr()
                message.msg_iov = iovPointer
                message.msg_iovlen = 1
                message.msg_control = c.baseAddress
                message.msg_controllen = numericCast(c.count)
                #if canImport(Glibc)
                let flags = Int32(MSG_CMSG_CLOEXEC)
                #else
                let flags: Int32 = 0
                #endif
                let n = recvmsg(fd, &message, flags)
                guard n > 0 else { return n }
                // Walk the control messages (CMSG_FIRSTHDR / CMSG_NXTHDR by hand).
                var offset = 0
                let headerSize = MemoryLayout<cmsghdr>.size
                while offset + headerSize <= Int(message.msg_controllen) {
                    let header = c.load(fromByteOffset: offset, as: cmsghdr.self)
                    let length = Int(header.cmsg_len)
                    guard length >= headerSize else { break }
                    if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                        for i in 0..<(length - headerSize) / 4 {
                            descriptors.append(c.load(fromByteOffset: offset + headerSize + 4 * i, as: Int32.self))
                        }
                    }
                    offset += (length + 7) & ~7
                }
                return n
            }
        }
    }

    /// The next line decoded (a reply read as the answer to `op`); nil on timeout.
    func readMessage(timeout: Duration?, answering op: String) throws(GattctlFailure) -> ControlMessage? {
        guard let line = try readLine(timeout: timeout) else { return nil }
        return try Self.decode(line, answering: op)
    }

    static func decode(_ line: String, answering op: String) throws(GattctlFailure) -> ControlMessage {
        do {
            return try ControlMessage.decode(Array(line.utf8), answering: op)
        } catch where error.code == .badJSON {
            throw .reply("gattd sent something that is not a JSON object: \(line)")
        } catch {
            throw .reply("gattd sent something unexpected (\(error.message)): \(line)")
        }
    }

    /// The message of an error reply, else its code.
    static func errorText(_ e: ControlError) -> String {
        e.message.isEmpty ? e.code.rawValue : e.message
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }

    /// send(2) that reports EPIPE instead of raising SIGPIPE.
    private static func sendNoSignal(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        return Glibc.send(fd, buffer, count, Int32(MSG_NOSIGNAL))
        #else
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        return Darwin.send(fd, buffer, count, 0)
        #endif
    }
}
