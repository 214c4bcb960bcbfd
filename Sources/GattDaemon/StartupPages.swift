#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOCore

/// Gives the kernel back the clean file pages start-up touched once. Loading gattd, the Swift
/// runtime, its libraries and the config reads code and read-only data that never runs again
/// (argument parsing, JSON config, protocol-conformance tables the runtime scans once, plus
/// the kernel's fault-around of 16 pages on each fault): about 15–20 MB of RSS that the idle
/// daemon does not need. Once gattd is advertising (and after a reload), this asks the kernel
/// to reclaim them: `madvise(MADV_PAGEOUT)` (Linux ≥ 5.4) over each of its own read-only or
/// executable file-backed mappings in `/proc/self/maps`. The kernel skips pages that other
/// processes map too (shared libc text stays), and what the daemon still uses comes back by
/// an ordinary page fault, from the page cache or the file. It only drops clean pages of
/// files; nothing is written or swapped (a mapping's private, dirty pages would go to swap
/// only where swap exists, as under memory pressure anyway).
///
/// Cheap (one read of `/proc/self/maps`, one `madvise` per mapping, a few milliseconds) and
/// never on the hot path. Errors (an older kernel: EINVAL) are ignored and logged once at
/// debug. `GATTD_KEEP_STARTUP_PAGES=1` in the environment turns it off (to measure without it).
/// docs/benchmarks.md shows the RSS with and without it.
enum StartupPages {
    /// `MADV_PAGEOUT` (linux/mman.h; not in every libc's headers).
    static let pageOut: Int32 = 21

    /// Whether the environment turned it off.
    static var disabled: Bool {
        #if canImport(Glibc) || canImport(Musl)
        guard let v = getenv("GATTD_KEEP_STARTUP_PAGES") else { return false }
        let value = String(cString: v)
        return !value.isEmpty && value != "0"
        #else
        return true
        #endif
    }

    /// `release` a little later on `eventLoop` (start-up's last steps, such as READY=1, run first).
    static func scheduleRelease(on eventLoop: any EventLoop, logger: Logger) {
        eventLoop.scheduleTask(in: .milliseconds(250)) { release(logger: logger) }
    }

    /// Asks the kernel to reclaim the clean start-up pages; the number of bytes advised.
    @discardableResult
    static func release(logger: Logger) -> Int {
        #if os(Linux)
        guard !disabled, let maps = readSelfMaps() else { return 0 }
        var advised = 0
        var failure: Int32 = 0
        for mapping in fileMappings(maps) {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.lowerBound) else { continue }
            if madvise(start, mapping.count, pageOut) == 0 {
                advised += mapping.count
            } else if failure == 0 {
                failure = errno
            }
        }
        if failure != 0 {
            logger.debug("startup pages: madvise(MADV_PAGEOUT) failed (errno \(failure)); RSS keeps them")
        } else {
            logger.debug("startup pages: advised the kernel to reclaim \(advised / 1024) KiB of clean file mappings")
        }
        return advised
        #else
        return 0
        #endif
    }

    /// The address ranges of the read-only or executable (never writable), private mappings
    /// of files in a `/proc/<pid>/maps` text ("start-end perms offset dev inode path").
    static func fileMappings(_ maps: [UInt8]) -> [Range<UInt>] {
        var ranges: [Range<UInt>] = []
        for line in maps.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1].count == 4 else { continue }
            let perms = Array(fields[1])
            guard perms[0] == UInt8(ascii: "r"), perms[1] == UInt8(ascii: "-"), perms[3] == UInt8(ascii: "p") else { continue }
            let path = fields[5].drop(while: { $0 == UInt8(ascii: " ") })
            guard path.first == UInt8(ascii: "/"), fields[4].contains(where: { $0 != UInt8(ascii: "0") }) else { continue }
            let bounds = fields[0].split(separator: UInt8(ascii: "-"))
            guard bounds.count == 2, let low = hex(bounds[0]), let high = hex(bounds[1]), low < high else { continue }
            ranges.append(low..<high)
        }
        return ranges
    }

    private static func hex(_ digits: ArraySlice<UInt8>) -> UInt? {
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt = 0
        for d in digits {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt(d - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt(d - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        return value
    }

    #if os(Linux)
    private static func readSelfMaps() -> [UInt8]? {
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            text += chunk[0..<n]
        }
        return text
    }
    #endif
}
