#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOCore

/// Gives the kernel back the clean file pages start-up touched once. Loading gattd (the Swift
/// runtime, its libraries), parsing arguments and the config and bringing up the controller run
/// code and read data that are not needed again (protocol-conformance tables the runtime scans
/// once, JSON, ArgumentParser, plus the kernel's fault-around of 16 pages on each page fault):
/// about 15 MB of RSS the idle daemon does not use; serving a central brings back the code of
/// discovery, subscriptions and notifications the same way. A second after gattd starts
/// advertising, after a reload and after the last central disconnects (`PeripheralDaemon`),
/// this asks the kernel to reclaim them: `madvise(MADV_PAGEOUT)` (Linux ≥ 5.4)
/// over the pages of its own private file mappings (`/proc/self/maps`) that are still the file's
/// (`/proc/self/pagemap` bit 61): never a page the process wrote (relocated data, variables),
/// so nothing is written back or swapped. The kernel also skips pages that other processes map
/// (shared libc text stays). What the daemon still uses comes back by an ordinary minor page
/// fault from the page cache (or a read of the file if memory was short).
///
/// It is advice: how much the kernel takes varies from run to run (docs/benchmarks.md: on
/// Linux 6.18, 4 to 14 MB of about 17 MB; the same advice given from another process with
/// `process_madvise` took 14 MB every time), and memory pressure would reclaim these pages anyway.
///
/// Cheap (two reads of /proc, a few `madvise` calls: about a millisecond) and never on the hot
/// path. Failures (an older kernel: EINVAL) are ignored and logged at debug.
/// `GATTD_KEEP_STARTUP_PAGES=1` in the environment turns it off (to measure without it);
/// docs/benchmarks.md shows the RSS with and without it.
enum StartupPages {
    /// `MADV_PAGEOUT` (linux/mman.h; not in every libc's headers).
    static let pageOut: Int32 = 21
    /// How long after advertising starts (a reload, the last disconnection): start-up's last
    /// steps (READY=1, the first control client, timers) have run by then, and a central that
    /// reconnects at once cancels it, so the pages are not faulted straight back.
    static let delay: TimeAmount = .seconds(1)

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

    /// Asks the kernel to reclaim the clean start-up pages; the number of bytes advised.
    @discardableResult
    static func release(logger: Logger) -> Int {
        #if os(Linux)
        guard !disabled, let maps = readAll("/proc/self/maps") else { return 0 }
        let pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        defer { if pagemap >= 0 { close(pagemap) } }
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        var advised = 0
        var failure: Int32 = 0
        for mapping in fileMappings(maps) {
            // Without pagemap, only executable mappings (text is never written).
            let runs = pagemap >= 0 ? cleanRuns(mapping.range, pagemap: pagemap, pageSize: pageSize)
                : mapping.executable ? [mapping.range] : []
            for run in runs {
                guard let start = UnsafeMutableRawPointer(bitPattern: run.lowerBound) else { continue }
                if madvise(start, run.count, pageOut) == 0 {
                    advised += run.count
                } else if failure == 0 {
                    failure = errno
                }
            }
        }
        if failure != 0 {
            logger.debug("startup pages: madvise(MADV_PAGEOUT) failed (errno \(failure)); RSS keeps them")
        } else {
            logger.debug("startup pages: advised the kernel to reclaim \(advised / 1024) KiB of clean file pages")
        }
        return advised
        #else
        return 0
        #endif
    }

    #if os(Linux)
    /// The parts of `range` without a page the process wrote: runs between present anonymous
    /// pages (pagemap: bit 63 present, bit 61 file page), absent pages included (a no-op).
    static func cleanRuns(_ range: Range<UInt>, pagemap: Int32, pageSize: UInt) -> [Range<UInt>] {
        let pages = Int((range.upperBound - range.lowerBound) / pageSize)
        var entries = [UInt64](repeating: 0, count: pages)
        let wanted = pages * 8
        let got = entries.withUnsafeMutableBytes { pread(pagemap, $0.baseAddress, wanted, off_t(range.lowerBound / pageSize * 8)) }
        guard got == wanted else { return [] }
        var runs: [Range<UInt>] = []
        var runStart: UInt?
        for (i, entry) in entries.enumerated() {
            let address = range.lowerBound + UInt(i) * pageSize
            let written = entry & (1 << 63) != 0 && entry & (1 << 61) == 0
            if written {
                if let s = runStart { runs.append(s..<address) }
                runStart = nil
            } else if runStart == nil {
                runStart = address
            }
        }
        if let s = runStart { runs.append(s..<range.upperBound) }
        return runs
    }
    #endif

    /// The private mappings of files in a `/proc/<pid>/maps` text ("start-end perms offset dev
    /// inode path"): their address ranges, and whether they are executable.
    static func fileMappings(_ maps: [UInt8]) -> [(range: Range<UInt>, executable: Bool)] {
        var ranges: [(range: Range<UInt>, executable: Bool)] = []
        for line in maps.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, fields[1].count == 4 else { continue }
            let perms = Array(fields[1])
            guard perms[0] == UInt8(ascii: "r"), perms[3] == UInt8(ascii: "p") else { continue }
            let path = fields[5].drop(while: { $0 == UInt8(ascii: " ") })
            guard path.first == UInt8(ascii: "/"), fields[4].contains(where: { $0 != UInt8(ascii: "0") }) else { continue }
            let bounds = fields[0].split(separator: UInt8(ascii: "-"))
            guard bounds.count == 2, let low = hex(bounds[0]), let high = hex(bounds[1]), low < high else { continue }
            ranges.append((low..<high, perms[2] == UInt8(ascii: "x")))
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
    private static func readAll(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
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
