#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

@testable import GattDaemon

/// A bound AF_UNIX datagram socket standing in for systemd's notify socket.
private final class NotifySocket {
    let fd: Int32
    let environmentValue: String
    private let cleanupPath: String?

    /// `abstractName` nil: a socket file in a fresh temp dir.
    init(abstractName: String? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name: [UInt8]
        if let abstractName {
            name = [0] + Array(abstractName.utf8)
            environmentValue = "@" + abstractName
            cleanupPath = nil
        } else {
            let dir = NSTemporaryDirectory() + "notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            mkdir(dir, 0o700)
            let path = dir + "/notify.sock"
            name = Array(path.utf8)
            environmentValue = path
            cleanupPath = path
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in name.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + name.count + (abstractName == nil ? 1 : 0))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next datagram as text, nil after the 2 s timeout.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }

    /// True when nothing is waiting.
    func isEmpty() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } < 0
    }

    deinit {
        close(fd)
        if let cleanupPath {
            unlink(cleanupPath)
            rmdir((cleanupPath as NSString).deletingLastPathComponent)
        }
    }
}

@Suite struct SystemdNotifierTests {
    @Test func disabledWithoutNotifySocket() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(notifier.destination == nil)
        #expect(notifier.watchdogInterval == nil)
        try notifier.ready(status: "no-op")
        try notifier.watchdog()
        #expect(!SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).isEnabled)
    }

    @Test func sendsEachMessageToAPathSocket() throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.environmentValue])
        #expect(notifier.destination == .path(socket.environmentValue))

        try notifier.ready(status: "advertising as \"Demo\"\nsecond line")
        #expect(socket.receive() == "READY=1\nSTATUS=advertising as \"Demo\" second line")
        try notifier.ready()
        #expect(socket.receive() == "READY=1")
        try notifier.status("2 centrals")
        #expect(socket.receive() == "STATUS=2 centrals")
        try notifier.watchdog()
        #expect(socket.receive() == "WATCHDOG=1")
        try notifier.stopping()
        #expect(socket.receive() == "STOPPING=1")
        try notifier.reloading(monotonicMicroseconds: 123_456_789)
        #expect(socket.receive() == "RELOADING=1\nMONOTONIC_USEC=123456789")
        #expect(socket.isEmpty())
    }

    @Test func reloadingCarriesTheCurrentMonotonicClock() throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.environmentValue])
        let before = SystemdNotifier.monotonicMicroseconds()
        try notifier.reloading()
        let after = SystemdNotifier.monotonicMicroseconds()
        let message = try #require(socket.receive())
        let lines = message.split(separator: "\n")
        #expect(lines.first == "RELOADING=1")
        let usec = try #require(lines.last.flatMap { UInt64($0.dropFirst("MONOTONIC_USEC=".count)) })
        #expect(before <= usec && usec <= after)
    }

    @Test func sendsToAnAbstractSocket() throws {
        let name = "gattd-test-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let socket = try NotifySocket(abstractName: name)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "@" + name])
        #expect(notifier.destination == .abstract(name))
        try notifier.ready()
        #expect(socket.receive() == "READY=1")
    }

    @Test func missingSocketIsAnErrorNotACrash() {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/gattd/notify"])
        #expect(throws: SystemdNotifier.Error.self) { try notifier.ready() }
        let tooLong = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "x", count: 200)])
        #expect(throws: SystemdNotifier.Error("NOTIFY_SOCKET /\(String(repeating: "x", count: 200)) is too long for a Unix socket address")) {
            try tooLong.ready()
        }
    }

    @Test func watchdogIntervalHonoursWatchdogPID() {
        let mine = SystemdNotifier(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"], pid: 42)
        #expect(mine.watchdogInterval == .seconds(30))
        #expect(mine.watchdogPingInterval == .seconds(15))
        let noPID = SystemdNotifier(environment: ["WATCHDOG_USEC": "500000"], pid: 42)
        #expect(noPID.watchdogInterval == .milliseconds(500))
        let someoneElse = SystemdNotifier(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "43"], pid: 42)
        #expect(someoneElse.watchdogInterval == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "0"]).watchdogInterval == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "soon"]).watchdogInterval == nil)
    }
}
