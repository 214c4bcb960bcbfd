#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import GattCore

/// The values of `"persist": true` characteristics, kept across restarts in
/// `<state-dir>/values.json`:
///
/// ```json
/// {
///   "version": 1,
///   "values": {
///     "device_label": {"hex": "4b69746368656e"}
///   }
/// }
/// ```
///
/// Keys are whatever the daemon chooses (the characteristic's config `id`, or its UUID
/// string when it has none); the store does not interpret them.
///
/// Crash safety: `save` writes `values.json.tmp-<pid>` in the same directory, fsyncs it,
/// renames it over `values.json` and fsyncs the directory, so after a `kill -9` or a power
/// cut the file is either the old or the new version, never a mix. `load` deletes temp
/// files left by an interrupted save, and a file it cannot parse is renamed aside to
/// `values.json.corrupt-<UTC timestamp>` and reported, never fatal.
///
/// `save` costs two fsyncs; for a stream of writes use `PersistentValueWriter`, which
/// coalesces them into at most one save per interval off the caller's thread.
public struct PersistentStore: Sendable {
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
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

    public static let formatVersion = 1

    public let directory: String
    public let fileName: String
    /// `directory/fileName`.
    public var path: String { directory.hasSuffix("/") ? directory + fileName : directory + "/" + fileName }

    public init(directory: String, fileName: String = "values.json") {
        self.directory = directory
        self.fileName = fileName
    }

    // MARK: - Load

    /// Reads the saved values. Never throws: a missing directory or file is an empty
    /// store; anything else odd is reported in `problems` and skipped.
    public func load() -> LoadResult {
        var problems: [String] = []
        removeLeftoverTempFiles(&problems)

        let bytes: [UInt8]
        switch Self.readFile(path) {
        case .success(let b): bytes = b
        case .failure(let e):
            if e.code == ENOENT { return LoadResult(values: [:], problems: problems) }
            problems.append("cannot read \(path): \(e.text); starting with no saved values")
            return LoadResult(values: [:], problems: problems)
        }

        switch Self.decode(bytes) {
        case .success(let (values, entryProblems)):
            problems += entryProblems.map { "\(path): \($0)" }
            return LoadResult(values: values, problems: problems)
        case .failure(let reason):
            let aside = setAside()
            switch aside {
            case .success(let name):
                problems.append("\(path) is not a valid state file (\(reason.message)); moved it to \(name) and started with no saved values")
            case .failure(let e):
                problems.append("\(path) is not a valid state file (\(reason.message)) and could not be moved aside (\(e.text)); starting with no saved values")
            }
            return LoadResult(values: [:], problems: problems)
        }
    }

    private func removeLeftoverTempFiles(_ problems: inout [String]) {
        guard let dir = opendir(directory) else { return }
        defer { closedir(dir) }
        let prefix = fileName + ".tmp-"
        let ownTemp = prefix + "\(getpid())"
        var leftovers: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            // Our own pid's temp file may be a save in progress on another thread.
            if name.hasPrefix(prefix), name != ownTemp { leftovers.append(name) }
        }
        for name in leftovers.sorted() {
            let full = directory + "/" + name
            if unlink(full) == 0 {
                problems.append("removed \(full), left over from an interrupted save")
            } else {
                problems.append("cannot remove \(full), left over from an interrupted save: \(Self.errnoText())")
            }
        }
    }

    /// Renames the main file to `values.json.corrupt-20261122T100000Z` (or `-2`, `-3`...).
    private func setAside() -> Result<String, SystemError> {
        let stamp = Self.compactTimestamp(secondsSinceEpoch: Int(Date().timeIntervalSince1970))
        var candidate = "\(path).corrupt-\(stamp)"
        var n = 2
        while access(candidate, F_OK) == 0 {
            candidate = "\(path).corrupt-\(stamp)-\(n)"
            n += 1
        }
        if rename(path, candidate) != 0 { return .failure(SystemError.current()) }
        return .success(candidate)
    }

    // MARK: - Save

    /// Atomically replaces the state file with `values`, creating the directory (mode
    /// 0700) if missing. Blocks for two fsyncs.
    public func save(_ values: [String: [UInt8]]) throws(Error) {
        try Self.makeDirectory(directory)
        let bytes = Self.encode(values)
        let temp = "\(path).tmp-\(getpid())"  // load() leaves this name alone
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Error("cannot create \(temp): \(Self.errnoText())") }
        var ok = false
        defer { if !ok { unlink(temp) } }
        do {
            defer { close(fd) }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { raw in write(fd, raw.baseAddress! + offset, raw.count - offset) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Error("cannot write \(temp): \(Self.errnoText())")
                }
                offset += n
            }
            guard fsync(fd) == 0 else { throw Error("cannot fsync \(temp): \(Self.errnoText())") }
        }
        guard rename(temp, path) == 0 else { throw Error("cannot rename \(temp) to \(path): \(Self.errnoText())") }
        ok = true
        // Make the rename itself durable.
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirfd >= 0 else { throw Error("cannot open \(directory) to fsync it: \(Self.errnoText())") }
        defer { close(dirfd) }
        guard fsync(dirfd) == 0 else { throw Error("cannot fsync \(directory): \(Self.errnoText())") }
    }

    /// `mkdir -p`: missing parents get 0755, the directory itself 0700.
    private static func makeDirectory(_ dir: String) throws(Error) {
        var st = stat()
        if stat(dir, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else { throw Error("\(dir) exists and is not a directory") }
            return
        }
        var missing: [String] = []
        var current = dir
        while !current.isEmpty, current != "/", stat(current, &st) != 0 {
            guard errno == ENOENT else { throw Error("cannot create \(dir): \(current): \(errnoText())") }
            missing.append(current)
            current = parent(of: current)
        }
        for (index, d) in missing.reversed().enumerated() {
            let mode: mode_t = index == missing.count - 1 ? 0o700 : 0o755
            if mkdir(d, mode) != 0 && errno != EEXIST {
                throw Error("cannot create \(d): \(errnoText())")
            }
        }
    }

    private static func parent(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return "" }
        return slash == p.startIndex ? "/" : String(p[..<slash])
    }

    // MARK: - Format

    /// The file's bytes: pretty, keys sorted, lowercase hex, trailing newline.
    public static func encode(_ values: [String: [UInt8]]) -> [UInt8] {
        var text = "{\n  \"version\": \(formatVersion),\n  \"values\": {"
        let keys = values.keys.sorted()
        for (i, key) in keys.enumerated() {
            text += i == 0 ? "\n" : ",\n"
            text += "    \(ControlJSON.string(key).text): {\"hex\": \"\(AttributeValueLiteral.hexString(values[key] ?? []))\"}"
        }
        text += keys.isEmpty ? "}\n}\n" : "\n  }\n}\n"
        return Array(text.utf8)
    }

    /// Parses a state file. Failure means the file as a whole is unusable; a bad entry
    /// is skipped and described in the second element.
    public static func decode(_ bytes: [UInt8]) -> Result<([String: [UInt8]], [String]), Error> {
        guard !bytes.isEmpty else { return .failure(Error("the file is empty")) }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            return .failure(Error("not valid JSON"))
        }
        guard let root = object as? [String: Any] else { return .failure(Error("the top level is not an object")) }
        guard let version = root["version"] as? Int else {
            return .failure(Error("\"version\" is missing"))
        }
        guard version == formatVersion else {
            return .failure(Error("unsupported version \(version), expected \(formatVersion)"))
        }
        guard let entries = root["values"] as? [String: Any] else {
            return .failure(Error("\"values\" is missing or not an object"))
        }
        var values: [String: [UInt8]] = [:]
        var problems: [String] = []
        for key in entries.keys.sorted() {
            guard let literal = entries[key] as? [String: Any], literal.count == 1,
                let (name, raw) = literal.first, let text = raw as? String,
                let encoding = AttributeValueLiteral.Encoding(rawValue: name)
            else {
                problems.append("values.\(key): expected {\"hex\": \"...\"}; ignored")
                continue
            }
            do {
                values[key] = try AttributeValueLiteral.decode(text, as: encoding)
            } catch {
                problems.append("values.\(key): \(error.message); ignored")
            }
        }
        return .success((values, problems))
    }

    /// `20261122T100000Z`.
    static func compactTimestamp(secondsSinceEpoch: Int) -> String {
        var t = time_t(secondsSinceEpoch)
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return "\(secondsSinceEpoch)" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(Int(parts.tm_year) + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    // MARK: - Syscall helpers

    struct SystemError: Swift.Error {
        var code: Int32
        var text: String { String(cString: strerror(code)) }
        static func current() -> SystemError { SystemError(code: errno) }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }

    private static func readFile(_ path: String) -> Result<[UInt8], SystemError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.current()) }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(.current())
            }
            if n == 0 { return .success(out) }
            out += chunk[0..<n]
        }
    }
}

/// Coalesces value changes into at most one `PersistentStore.save` per interval, written
/// on a private serial queue so the caller (the event loop) never waits for an fsync.
///
/// ```swift
/// let loaded = store.load()                  // log loaded.problems as warnings
/// let writer = PersistentValueWriter(store: store, initialValues: loaded.values) { error in
///     logger.warning("cannot save values: \(error)")
/// }
/// writer.set("device_label", bytes)          // after every accepted write; cheap
/// try writer.flush()                         // at shutdown: waits for the last save
/// ```
///
/// The first change after a quiet period is saved `interval` later (default 200 ms) with
/// every change made in between; a `kill -9` therefore loses at most the last `interval`
/// of changes, and the file is never corrupt. A failed save is reported to `onError` and
/// retried with the next change or `flush()`. Thread-safe.
public final class PersistentValueWriter: @unchecked Sendable {
    public let store: PersistentStore
    public let interval: Duration
    private let onError: @Sendable (PersistentStore.Error) -> Void
    private let queue = DispatchQueue(label: "gattd.persistent-store")
    private let lock = NSLock()
    private var current: [String: [UInt8]]
    private var dirty = false
    private var scheduled = false

    public init(
        store: PersistentStore, initialValues: [String: [UInt8]] = [:], interval: Duration = .milliseconds(200),
        onError: @escaping @Sendable (PersistentStore.Error) -> Void
    ) {
        self.store = store
        self.interval = interval
        self.onError = onError
        self.current = initialValues
    }

    /// The values as they will be (or were) saved.
    public var values: [String: [UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    /// Records a new value; a save follows within `interval`. Setting the value already
    /// stored does nothing.
    public func set(_ key: String, _ value: [UInt8]) {
        update { values in
            if values[key] == value { return false }
            values[key] = value
            return true
        }
    }

    /// Forgets a key (e.g. a characteristic no longer in the config).
    public func remove(_ key: String) {
        update { $0.removeValue(forKey: key) != nil }
    }

    /// Saves now if anything changed since the last successful save, and waits for it.
    public func flush() throws(PersistentStore.Error) {
        let result: PersistentStore.Error? = queue.sync { saveIfDirty() }
        if let result { throw result }
    }

    private func update(_ change: (inout [String: [UInt8]]) -> Bool) {
        lock.lock()
        guard change(&current) else {
            lock.unlock()
            return
        }
        dirty = true
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule {
            let (seconds, attoseconds) = interval.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            queue.asyncAfter(deadline: .now() + .nanoseconds(max(0, nanoseconds))) { [self] in
                if let error = saveIfDirty() { onError(error) }
            }
        }
    }

    /// Runs on `queue`.
    private func saveIfDirty() -> PersistentStore.Error? {
        lock.lock()
        scheduled = false
        guard dirty else {
            lock.unlock()
            return nil
        }
        dirty = false
        let snapshot = current
        lock.unlock()
        do {
            try store.save(snapshot)
            return nil
        } catch {
            lock.lock()
            dirty = true
            lock.unlock()
            return error
        }
    }
}
