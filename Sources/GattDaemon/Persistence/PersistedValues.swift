import Dispatch
import GattCore
import Logging
import NIOCore

/// The `"persist": true` characteristics' values in `--state-dir`, as the daemon uses
/// them: loaded into a database before serving, then changed only through `commit`,
/// which completes once the change is durable. Keys are the config id, else the UUID string.
///
/// Group commit: one commit (one `PersistentStore.commit`, i.e. one disk flush) runs at a
/// time on a private serial queue, off the event loop; every change submitted while it
/// runs joins the next one, so a burst costs a flush per batch, not per write. Each
/// caller's future completes on its event loop, in submission order.
///
/// Order (`CommitQueue`): every write of a key is submitted once, when it happens, and a
/// commit writes only the newest value of each key, so an older value is never written
/// after a newer one; a future completes with the commit of its value or a newer one.
/// Serving a durable value (`applying`, the `set` after its commit) is no new write.
///
/// Failures: the futures of the batch fail with the store's error and the batch is
/// dropped (the durable values stay as they were). The log gets one error line per
/// condition (errno) and one line when saving works again; each later commit retries, so
/// persistence resumes by itself when the directory is writable again.
///
/// Every method but `init` is called on the one event loop that runs the daemon.
public final class PersistedValues: @unchecked Sendable {
    /// Runs one commit off the event loop: on a private serial queue, or, in tests, when
    /// the test chooses (a deterministic interleaving).
    public typealias CommitRunner = @Sendable (@escaping @Sendable () -> Void) -> Void

    private let store: PersistentStore
    private let queue = DispatchQueue(label: "gattd.persisted-values")
    private let run: CommitRunner
    private let logger: Logger

    /// Loop-confined state.
    private var commits: CommitQueue
    private var promises: [Int: EventLoopPromise<Committed>] = [:]
    private var nextTicket = 0
    private var failure: String?
    /// Values being put in place because they are durable (not new writes): see `applying`.
    private var applyingDurable: [String: [UInt8]] = [:]

    /// A durable write's outcome: `overtaken` lists its keys whose served value is newer
    /// (a Write Command that came after it), with that value: leave those as they are.
    public struct Committed: Sendable, Equatable {
        public var overtaken: [String: [UInt8]]
    }

    public convenience init(stateDirectory: String, logger: Logger) {
        self.init(store: PersistentStore(directory: stateDirectory), logger: logger)
    }

    /// `runner` nil: the private serial queue (a test's runner must not overlap `flush`).
    public init(store: PersistentStore, logger: Logger, runner: CommitRunner? = nil) {
        self.store = store
        self.logger = logger
        self.run = runner ?? { [queue] work in queue.async(execute: work) }
        let loaded = store.load()
        for p in loaded.problems { logger.warning("\(p)") }
        commits = CommitQueue(durable: loaded.values)
    }

    public static func key(_ c: Characteristic) -> String { c.id ?? c.uuid.description }

    /// The durable values.
    public var values: [String: [UInt8]] { commits.durable.mapValues(\.value) }

    /// Whether a commit is running or waiting.
    public var isBusy: Bool { commits.isBusy }

    /// Puts saved values into `db` (persisted characteristics only; a saved value
    /// longer than the maximum length is ignored with a warning). Returns how many.
    @discardableResult
    public func apply(to db: inout GATTDatabase) -> Int {
        var n = 0
        for c in db.characteristics where c.valueSource == .persisted {
            guard let v = commits.durable[Self.key(c)]?.value else { continue }
            guard v.count <= c.maxLength else {
                logger.warning("saved value of \(c.displayName) (\(v.count) bytes) is longer than its maximum length \(c.maxLength); ignored")
                continue
            }
            db.setValue(v, at: c.valueHandle)
            n += 1
        }
        return n
    }

    /// Makes the values of persisted characteristics durable (others are ignored); the
    /// future succeeds once they are (or newer values of the same characteristics), or fails
    /// with `PersistentStore.Error`.
    public func commit(_ db: GATTDatabase, _ writes: [PersistedValue], on eventLoop: any EventLoop) -> EventLoopFuture<Committed> {
        let changes = writes.compactMap { w -> (String, [UInt8])? in
            guard db.contains(w.characteristic), db[w.characteristic].valueSource == .persisted else { return nil }
            return (Self.key(db[w.characteristic]), w.value)
        }
        return commit(changes, on: eventLoop)
    }

    /// Makes `changes` durable (in order; a later one of a key is newer).
    public func commit(_ changes: [(key: String, value: [UInt8])], on eventLoop: any EventLoop) -> EventLoopFuture<Committed> {
        guard !changes.isEmpty else { return eventLoop.makeSucceededFuture(Committed(overtaken: [:])) }
        let promise = eventLoop.makePromise(of: Committed.self)
        nextTicket += 1
        promises[nextTicket] = promise
        commits.submit(changes, ticket: nextTicket)
        startCommit(on: eventLoop)
        return promise.futureResult
    }

    /// Best effort (Write Commands, Signed Writes: served at once): saves the value of a
    /// persisted characteristic in the background unless it is the newest submitted already;
    /// a failure is only logged. A value `applying` puts in place is no new write: skipped.
    public func record(_ db: GATTDatabase, characteristic index: CharacteristicIndex, value: [UInt8], on eventLoop: any EventLoop) {
        guard db.contains(index), db[index].valueSource == .persisted else { return }
        let key = Self.key(db[index])
        if applyingDurable[key] == value {
            applyingDurable[key] = nil
            return
        }
        guard commits.record(key, value) else { return }
        startCommit(on: eventLoop)
    }

    /// Runs `body`, which serves `writes` that are durable already (an answered Write
    /// Request or Execute Write): their `.written` events are not recorded as new writes.
    public func applying<T>(_ db: GATTDatabase, _ writes: [PersistedValue], _ body: () -> T) -> T {
        for w in writes where db.contains(w.characteristic) && db[w.characteristic].valueSource == .persisted {
            applyingDurable[Self.key(db[w.characteristic])] = w.value
        }
        defer { applyingDurable = [:] }
        return body()
    }

    private func startCommit(on eventLoop: any EventLoop) {
        guard let changes = commits.startCommit() else { return }
        let store = self.store
        run {
            let result = Result { () throws(PersistentStore.Error) in try store.commit(changes) }
            eventLoop.execute { self.finished(result, on: eventLoop) }
        }
    }

    private func finished(_ result: Result<Void, PersistentStore.Error>, on eventLoop: any EventLoop) {
        let completions = commits.finish(durable: result.isSuccess)
        report(result)
        complete(completions, result)
        startCommit(on: eventLoop)
    }

    private func report(_ result: Result<Void, PersistentStore.Error>) {
        switch result {
        case .success:
            if let f = failure {
                failure = nil
                logger.notice("persisted values are saved again in \(store.directory.path) (after: \(f))")
            }
        case .failure(let error):
            let condition = error.errno.map { "\($0)" } ?? error.message
            if failure != condition {
                failure = condition
                logger.error("cannot save persisted values: \(error); writes of persisted values are answered with an error until saving works again")
            }
        }
    }

    private func complete(_ completions: [CommitQueue.Completion], _ result: Result<Void, PersistentStore.Error>) {
        for c in completions {
            guard let promise = promises.removeValue(forKey: c.ticket) else { continue }
            switch result {
            case .success: promise.succeed(Committed(overtaken: c.overtaken))
            case .failure(let error): promise.fail(error)
            }
        }
    }

    /// At shutdown: commits what waits, then compacts (one snapshot, empty log). Blocks
    /// until the commit in flight, queued before, is done (with the default runner).
    public func flush() {
        let pending = commits.takeWaiting()
        let changes = pending.values.mapValues(\.value)
        let store = self.store
        let (committed, compacted): (Result<Void, PersistentStore.Error>, PersistentStore.Error?) = queue.sync {
            if case .failure(let e) = Result(catching: { () throws(PersistentStore.Error) in try store.commit(changes) }) {
                return (.failure(e), nil)
            }
            if case .failure(let e) = Result(catching: { () throws(PersistentStore.Error) in try store.compact() }) {
                return (.success(()), e)
            }
            return (.success(()), nil)
        }
        if let compacted { logger.warning("cannot compact persisted values at shutdown: \(compacted)") }
        if case .failure(let error) = committed { logger.warning("cannot save persisted values at shutdown: \(error)") }
        complete(commits.finish(pending, durable: committed.isSuccess), committed)
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
