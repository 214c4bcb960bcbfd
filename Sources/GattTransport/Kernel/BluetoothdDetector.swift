#if canImport(Glibc)
import Glibc
#endif

/// Finds a running bluetoothd, which owns the adapters' ATT channel when it runs.
public enum BluetoothdDetector {
    /// What to tell the user when bluetoothd is in the way.
    public static func advice(adapter: String) -> String {
        "stop bluetoothd (systemctl stop bluetooth) or give gattd the controller exclusively with --transport user:\(adapter)"
    }

    /// The start-up warning when bluetoothd runs: nil when it does not.
    public static func warning(adapter: String, procRoot: String = "/proc") -> String? {
        guard let pid = runningPID(procRoot: procRoot) else { return nil }
        return "bluetoothd (pid \(pid)) is running and serves GATT on \(adapter) itself: " + advice(adapter: adapter)
    }

    /// The pid of a process whose /proc/PID/comm is "bluetoothd", if any.
    public static func runningPID(procRoot: String = "/proc") -> Int? {
        guard let dir = opendir(procRoot) else { return nil }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = Int(name) else { continue }
            if readSmallFile("\(procRoot)/\(name)/comm")?.split(separator: "\n").first == "bluetoothd" { return pid }
        }
        return nil
    }

    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}
