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

    private struct Change {
        var key: String
        var value: [UInt8]
        var promise: EventLoopPromise<Void>?
    }
    /// Loop-confined state.
    private var durable: [String: [UInt8]]
    private var inFlight: [Change] = []
    private var waiting: [Change] = []
    private var committing = false
    private var failure: String?

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
        durable = loaded.values
    }

    public static func key(_ c: Characteristic) -> String { c.id ?? c.uuid.description }

    /// The durable values.
    public var values: [String: [UInt8]] { durable }

    /// Whether a commit is running or waiting.
    public var isBusy: Bool { committing || !waiting.isEmpty }

    /// Puts saved values into `db` (persisted characteristics only; a saved value
    /// longer than the maximum length is ignored with a warning). Returns how many.
    @discardableResult
    public func apply(to db: inout GATTDatabase) -> Int {
        var n = 0
        for c in db.characteristics where c.persist {
            guard let v = durable[Self.key(c)] else { continue }
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
    /// future succeeds once they are, or fails with `PersistentStore.Error`.
    public func commit(_ db: GATTDatabase, _ writes: [PersistedWrite], on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let changes = writes.compactMap { w -> (String, [UInt8])? in
            guard db.characteristics.indices.contains(w.characteristic), db.characteristics[w.characteristic].persist else { return nil }
            return (Self.key(db.characteristics[w.characteristic]), w.value)
        }
        return commit(changes, on: eventLoop)
    }

    /// Makes `changes` durable (in order; later ones win).
    public func commit(_ changes: [(key: String, value: [UInt8])], on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard let last = changes.last else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        for c in changes.dropLast() { waiting.append(Change(key: c.key, value: c.value, promise: nil)) }
        waiting.append(Change(key: last.key, value: last.value, promise: promise))
        startCommit(on: eventLoop)
        return promise.futureResult
    }

    /// Best effort (Write Commands, values set while not held): commits the value of a
    /// persisted characteristic when it differs from the latest one submitted; a failure
    /// is only logged.
    public func record(_ db: GATTDatabase, characteristic index: Int, value: [UInt8], on eventLoop: any EventLoop) {
        guard db.characteristics.indices.contains(index), db.characteristics[index].persist else { return }
        let key = Self.key(db.characteristics[index])
        guard latest(key) != value else { return }
        waiting.append(Change(key: key, value: value, promise: nil))
        startCommit(on: eventLoop)
    }

    /// The value a restart will have once the commits submitted so far finish.
    private func latest(_ key: String) -> [UInt8]? {
        waiting.last { $0.key == key }?.value ?? inFlight.last { $0.key == key }?.value ?? durable[key]
    }

    private func startCommit(on eventLoop: any EventLoop) {
        guard !committing, !waiting.isEmpty else { return }
        committing = true
        inFlight = waiting
        waiting = []
        let changes = inFlight.map { (key: $0.key, value: $0.value) }
        let store = self.store
        run {
            let result = Result { () throws(PersistentStore.Error) in try store.commit(changes) }
            eventLoop.execute { self.finished(result, on: eventLoop) }
        }
    }

    private func finished(_ result: Result<Void, PersistentStore.Error>, on eventLoop: any EventLoop) {
        let batch = inFlight
        inFlight = []
        committing = false
        switch result {
        case .success:
            for c in batch { durable[c.key] = c.value }
            if let f = failure {
                failure = nil
                logger.notice("persisted values are saved again in \(store.directory.path) (after: \(f))")
            }
            for c in batch { c.promise?.succeed() }
        case .failure(let error):
            let condition = error.errno.map { "\($0)" } ?? error.message
            if failure != condition {
                failure = condition
                logger.error("cannot save persisted values: \(error); writes of persisted values are answered with an error until saving works again")
            }
            for c in batch { c.promise?.fail(error) }
        }
        startCommit(on: eventLoop)
    }

    /// At shutdown: commits what waits, then compacts (one snapshot, empty log). Blocks
    /// until the commit in flight, queued before, is done.
    public func flush() {
        let pending = waiting
        waiting = []
        let changes = pending.map { (key: $0.key, value: $0.value) }
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
        switch committed {
        case .success:
            for c in pending {
                durable[c.key] = c.value
                c.promise?.succeed()
            }
        case .failure(let error):
            logger.warning("cannot save persisted values at shutdown: \(error)")
            for c in pending { c.promise?.fail(error) }
        }
    }
}
