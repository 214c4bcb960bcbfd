import GattCore
import Logging

/// The `"persist": true` characteristics' values in `--state-dir`, as the
/// daemon uses them: loaded into a database before serving, recorded after
/// every accepted write or `set`/`notify` (saved by `PersistentValueWriter`,
/// coalesced, off the event loop). Keys are the config id, else the UUID string.
public final class PersistedValues: @unchecked Sendable {
    public let writer: PersistentValueWriter
    private let logger: Logger

    public init(stateDirectory: String, logger: Logger) {
        self.logger = logger
        let store = PersistentStore(directory: stateDirectory)
        let loaded = store.load()
        for p in loaded.problems { logger.warning("\(p)") }
        writer = PersistentValueWriter(store: store, initialValues: loaded.values) { error in
            logger.warning("cannot save persisted values: \(error)")
        }
    }

    public static func key(_ c: Characteristic) -> String { c.id ?? c.uuid.description }

    /// Puts saved values into `db` (persisted characteristics only; a saved value
    /// longer than the maximum length is ignored with a warning). Returns how many.
    @discardableResult
    public func apply(to db: inout GATTDatabase) -> Int {
        let saved = writer.values
        var n = 0
        for c in db.characteristics where c.persist {
            guard let v = saved[Self.key(c)] else { continue }
            guard v.count <= c.maxLength else {
                logger.warning("saved value of \(c.displayName) (\(v.count) bytes) is longer than its maximum length \(c.maxLength); ignored")
                continue
            }
            db.setValue(v, at: c.valueHandle)
            n += 1
        }
        return n
    }

    /// Records a characteristic's new value when it is persisted.
    public func record(_ db: GATTDatabase, characteristic index: Int, value: [UInt8]) {
        guard db.characteristics.indices.contains(index) else { return }
        let c = db.characteristics[index]
        guard c.persist else { return }
        writer.set(Self.key(c), value)
    }

    /// Writes pending changes now (shutdown).
    public func flush() {
        do {
            try writer.flush()
        } catch {
            logger.warning("cannot save persisted values: \(error)")
        }
    }
}
