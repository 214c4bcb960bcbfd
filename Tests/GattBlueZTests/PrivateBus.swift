import Foundation
import GattDBus
import Synchronization

/// A dbus-daemon of the test's own (a session bus on a socket in a temporary folder), so the
/// D-Bus tests need no system bus. CI installs dbus-daemon (.ci/run).
final class PrivateBus: @unchecked Sendable {
    let address: String
    private var pid: pid_t = 0
    private let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("gattd-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("bus").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>session</type><listen>unix:path=\(socket)</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
            """
        let configPath = folder.appendingPathComponent("bus.conf")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        // posix_spawn and waitpid, not Foundation's Process (whose waitUntilExit can hang off
        // the main run loop).
        var out: [Int32] = [-1, -1]
        guard pipe(&out) == 0 else { throw DBusError("test", "pipe") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_addclose(&actions, out[0])
        let argv = ["/usr/bin/dbus-daemon", "--config-file=\(configPath.path)", "--nofork", "--nopidfile", "--print-address=1"]
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let r = posix_spawn(&pid, argv[0], &actions, nil, &cargs, environ)
        for p in cargs { free(p) }
        posix_spawn_file_actions_destroy(&actions)
        close(out[1])
        defer { close(out[0]) }
        guard r == 0 else { throw DBusError("test", "cannot start dbus-daemon: \(r)") }
        // The daemon prints its address once it listens.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(out[0], &byte, 1) == 1, byte != 0x0A { line.append(byte) }
        address = String(decoding: line, as: UTF8.self)
        guard address.hasPrefix("unix:") else { throw DBusError("test", "dbus-daemon printed no address: \(address)") }
    }

    func connect() throws -> DBusConnection { try DBusConnection(.address(address), description: "test") }

    /// Ends the bus (its clients see the connection break).
    func kill() {
        guard pid > 0 else { return }
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        pid = 0
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// Waits (up to `seconds`) for a value some callback delivers.
final class Delivery<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func deliver(_ v: T) {
        let first = value.withLock { current in
            guard current == nil else { return false }
            current = v
            return true
        }
        if first { done.signal() }
    }

    func wait(seconds: Double = 10) -> T? {
        _ = done.wait(timeout: .now() + seconds)
        return value.withLock { $0 }
    }
}
