#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

/// The values of `"persist": true` characteristics in a state directory: a snapshot
/// (`values.json`) and an append-only log of the commits since (`values.log`); the file
/// formats are in `StateFileFormat`.
///
/// `commit(_:)` returns only when the changes are durable: one log line written at the
/// end of the log and fdatasync'ed (one disk flush), or, when the log has grown past
/// `compactionThreshold` or after any failure, a compaction: the new snapshot written to
/// `values.json.tmp-<pid>`, fsynced, renamed over `values.json` and the directory fsynced,
/// then the log cut to zero. Each snapshot has a new generation and log lines of older
/// generations are ignored, so a crash anywhere in a compaction loses nothing. A torn or
/// corrupt log tail is ignored at `load()` and overwritten by the next commit.
///
/// `load()` never fails: a missing directory or file is an empty store; a snapshot that
/// cannot be parsed is renamed aside to `values.json.corrupt-<UTC timestamp>` and reported.
///
/// Not thread-safe: `PersistedValues` runs it on its serial queue only.
public final class PersistentStore: @unchecked Sendable {
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        /// The system error, when a file operation failed (the "condition" logged once).
        public var errno: Errno?
        public init(_ message: String, errno: Errno? = nil) {
            self.message = message
            self.errno = errno
        }
        init(_ e: StateFileError) { self.init(e.description, errno: e.errno) }
        public var description: String { message }
    }

    /// What `load` found. `problems` are complete sentences for the log (warnings).
    public struct LoadResult: Sendable, Equatable {
        public var values: [String: [UInt8]]
        public var problems: [String]
        public init(values: [String: [UInt8]], problems: [String]) {
            self.values = values
            self.problems = problems
        }
    }

    public static let snapshotName = "values.json"
    public static let logName = "values.log"

    public let directory: any StateDirectory
    /// Log size above which the next commit compacts instead of appending.
    public let compactionThreshold: Int
    /// The durable values (as a restart would load them).
    public private(set) var values: [String: [UInt8]] = [:]
    public private(set) var generation: UInt64 = 0
    /// Where the next log line goes: the end of the last intact line.
    private var logLength = 0
    /// The log may hold bytes past `logLength` (a torn tail) or a failed write: cut or compact first.
    private var logNeedsCut = false
    private var needsCompaction = false

    public static let defaultCompactionThreshold = 256 * 1024

    public init(directory: any StateDirectory, compactionThreshold: Int = defaultCompactionThreshold) {
        self.directory = directory
        self.compactionThreshold = compactionThreshold
    }

    public convenience init(directory: String) {
        self.init(directory: SystemStateDirectory(directory))
    }

    /// `directory/values.json`.
    public var path: String { directory.path + "/" + Self.snapshotName }

    // MARK: - Load

    /// Reads the snapshot and replays the log. Never throws.
    public func load(now secondsSinceEpoch: Int = Int(time(nil))) -> LoadResult {
        var problems = directory.removeFiles(withPrefix: Self.snapshotName + ".tmp-")
        values = [:]
        generation = 0
        do {
            if let bytes = try directory.read(Self.snapshotName) {
                switch StateFileFormat.parseSnapshot(bytes) {
                case .success(let s):
                    values = s.values
                    generation = s.generation
                    problems += s.problems.map { "\(path): \($0)" }
                case .failure(let reason):
                    let stamp = Self.compactTimestamp(secondsSinceEpoch: secondsSinceEpoch)
                    do {
                        let aside = try directory.setAside(Self.snapshotName, suffix: "corrupt-\(stamp)")
                        problems.append("\(path) is not a valid state file (\(reason.message)); moved it to \(aside) and started with no saved values")
                    } catch {
                        problems.append("\(path) is not a valid state file (\(reason.message)) and could not be moved aside (\(error.errno)); starting with no saved values")
                    }
                    needsCompaction = true
                    return LoadResult(values: [:], problems: problems)
                }
            }
        } catch {
            problems.append("\(error); starting with no saved values")
            needsCompaction = true
            return LoadResult(values: [:], problems: problems)
        }
        do {
            let log = try directory.read(Self.logName) ?? []
            let r = StateFileFormat.replay(log, generation: generation)
            for c in r.changes { values[c.key] = c.value }
            logLength = r.intactLength
            if r.intactLength < log.count {
                logNeedsCut = true
                problems.append("\(directory.path)/\(Self.logName): ignored \(log.count - r.intactLength) bytes after offset \(r.intactLength) (a write torn by a crash)")
            }
        } catch {
            problems.append("\(error); using the snapshot only")
            needsCompaction = true
        }
        return LoadResult(values: values, problems: problems)
    }

    // MARK: - Commit

    /// Makes `changes` (one value per key) durable. On failure nothing changed as far as
    /// `values` and a restart are concerned.
    public func commit(_ changes: [String: [UInt8]]) throws(Error) {
        guard !changes.isEmpty else { return }
        let next = values.merging(changes) { _, new in new }
        if needsCompaction || logLength >= compactionThreshold {
            return try compact(next)
        }
        do {
            if logNeedsCut {
                try directory.truncate(Self.logName, to: logLength)
                logNeedsCut = false
            }
            let record = StateFileFormat.logRecord(changes, generation: generation)
            try directory.write(Self.logName, record, at: logLength)
            logLength += record.count
            values = next
        } catch {
            // Part of the line may be on disk; it is cut (by the compaction) before anything follows it.
            needsCompaction = true
            throw Error(error)
        }
    }

    /// Writes every value as a new snapshot generation and empties the log.
    public func compact() throws(Error) { try compact(values) }

    private func compact(_ next: [String: [UInt8]]) throws(Error) {
        let g = generation + 1
        do {
            try directory.replace(Self.snapshotName, with: StateFileFormat.snapshot(next, generation: g))
        } catch {
            needsCompaction = true
            throw Error(error)
        }
        // Durable from here: the log's lines are of an older generation now.
        generation = g
        values = next
        do {
            try directory.truncate(Self.logName, to: 0)
            logLength = 0
            logNeedsCut = false
            needsCompaction = false
        } catch {
            needsCompaction = true  // never append after what may be left in the log
        }
    }

    /// `20261122T100000Z`.
    static func compactTimestamp(secondsSinceEpoch: Int) -> String {
        var t = time_t(secondsSinceEpoch)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "\(secondsSinceEpoch)" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(Int(parts.tm_year) + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }
}
