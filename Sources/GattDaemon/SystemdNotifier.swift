#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The sd_notify protocol spoken directly, without libsystemd (sd_notify(3)): one
/// AF_UNIX datagram of newline-separated `KEY=value` assignments to the socket named by
/// `NOTIFY_SOCKET` (a path, or an abstract socket when it starts with "@").
///
/// Every method is a no-op when `NOTIFY_SOCKET` is unset (not started by systemd, or
/// `Type=` is not notify), so the daemon can call them unconditionally:
///
/// ```swift
/// let notifier = SystemdNotifier()
/// try? notifier.ready(status: "advertising as \"Demo\"")   // after the controller is up
/// try? notifier.status("2 centrals connected")
/// try? notifier.reloading(); ...; try? notifier.ready()     // around a SIGHUP reload
/// try? notifier.stopping()                                  // at the start of shutdown
/// if let every = notifier.watchdogPingInterval { /* schedule try? notifier.watchdog() */ }
/// ```
///
/// The struct only holds strings; each message opens, uses and closes its own socket
/// (as libsystemd does), so it is `Sendable` and may be used from any thread.
public struct SystemdNotifier: Sendable {
    /// Where the notifications go.
    public enum Destination: Sendable, Equatable {
        /// A socket file, e.g. `/run/systemd/notify`.
        case path(String)
        /// A Linux abstract socket: `NOTIFY_SOCKET=@name` → name bytes after a NUL.
        case abstract(String)
    }

    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// nil when `NOTIFY_SOCKET` is unset or empty: every send is then a no-op.
    public let destination: Destination?

    /// `WATCHDOG_USEC` when set, positive and meant for this process (`WATCHDOG_PID`
    /// unset or equal to our pid): the service must send `WATCHDOG=1` more often than this.
    public let watchdogInterval: Duration?

    /// Half of `watchdogInterval`, the ping period sd_watchdog_enabled(3) recommends.
    public var watchdogPingInterval: Duration? { watchdogInterval.map { $0 / 2 } }

    public var isEnabled: Bool { destination != nil }

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`
    /// (the process environment when nil).
    public init(environment: [String: String]? = nil, pid: Int32 = getpid()) {
        func lookup(_ key: String) -> String? {
            if let environment { return environment[key] }
            return getenv(key).map { String(cString: $0) }
        }
        if let socket = lookup("NOTIFY_SOCKET"), !socket.isEmpty {
            destination = socket.hasPrefix("@") ? .abstract(String(socket.dropFirst())) : .path(socket)
        } else {
            destination = nil
        }
        var interval: Duration?
        if let usecText = lookup("WATCHDOG_USEC"), let usec = UInt64(usecText), usec > 0, usec <= UInt64(Int64.max) {
            if let pidText = lookup("WATCHDOG_PID") {
                if let watchdogPID = Int32(pidText), watchdogPID == pid { interval = .microseconds(Int64(usec)) }
            } else {
                interval = .microseconds(Int64(usec))
            }
        }
        watchdogInterval = interval
    }

    // MARK: - Messages

    /// `READY=1`, optionally with `STATUS=`: startup finished (or a reload finished).
    public func ready(status: String? = nil) throws(Error) {
        try send(["READY=1"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// `STATUS=text`: free-form text shown by `systemctl status`.
    public func status(_ text: String) throws(Error) {
        try send(["STATUS=\(Self.oneLine(text))"])
    }

    /// `WATCHDOG=1`: keep-alive ping for `WatchdogSec=`.
    public func watchdog() throws(Error) {
        try send(["WATCHDOG=1"])
    }

    /// `STOPPING=1`: shutdown has begun.
    public func stopping() throws(Error) {
        try send(["STOPPING=1"])
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC, required by `Type=notify-reload`
    /// and harmless otherwise). Send `ready()` when the reload is done.
    public func reloading(monotonicMicroseconds: UInt64 = SystemdNotifier.monotonicMicroseconds()) throws(Error) {
        try send(["RELOADING=1", "MONOTONIC_USEC=\(monotonicMicroseconds)"])
    }

    /// Sends the assignments as one datagram, joined by "\n". No-op when disabled.
    public func send(_ assignments: [String]) throws(Error) {
        guard let destination else { return }
        try Self.sendDatagram(Array(assignments.joined(separator: "\n").utf8), to: destination)
    }

    /// CLOCK_MONOTONIC in microseconds, the clock systemd uses for `MONOTONIC_USEC=`.
    public static func monotonicMicroseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }

    // MARK: - Socket

    private static func oneLine(_ s: String) -> String {
        String(s.map { $0.isNewline ? " " : $0 })
    }

    private static func sendDatagram(_ payload: [UInt8], to destination: Destination) throws(Error) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name: [UInt8]
        let description: String
        switch destination {
        case .path(let p):
            name = Array(p.utf8)
            description = p
        case .abstract(let a):
            name = [0] + Array(a.utf8)
            description = "@" + a
        }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        // A path needs room for its NUL terminator; an abstract name does not have one.
        let isPath = name.first != 0
        guard !name.isEmpty, name.count + (isPath ? 1 : 0) <= capacity else {
            throw Error("NOTIFY_SOCKET \(description) is too long for a Unix socket address")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in name.enumerated() { raw[i] = b }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        let length = socklen_t(pathOffset + name.count + (isPath ? 1 : 0))

        #if canImport(Darwin)
        let fd = socket(AF_UNIX, SOCK_DGRAM, 0)
        #else
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
        guard fd >= 0 else { throw Error("socket(AF_UNIX, SOCK_DGRAM): \(errnoText())") }
        #if canImport(Darwin)
        let flags: Int32 = 0
        #else
        let flags = Int32(MSG_NOSIGNAL)
        #endif
        defer { close(fd) }
        let sent = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { ap in
                ap.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    sendto(fd, bytes.baseAddress, bytes.count, flags, sa, length)
                }
            }
        }
        guard sent == payload.count else {
            throw Error("sending to NOTIFY_SOCKET \(description): \(sent < 0 ? errnoText() : "short write")")
        }
    }

    private static func errnoText() -> String {
        String(cString: strerror(errno))
    }
}
