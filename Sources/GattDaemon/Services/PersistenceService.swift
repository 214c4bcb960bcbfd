import GattCore
import NIOCore

/// Persisted values on the daemon's side (`PersistedValues`, which owns `<state-dir>/values.json`
/// and `values.log` and their group commit): what is made durable before it is acknowledged — a
/// control `set`/`notify`, and the values of the ATT server's commits (`DeferredAccess.commit`)
/// — and then put in place. Without a state directory nothing is kept and nothing waits.
final class PersistenceService {
    private unowned let context: DaemonContext
    private let eventLoop: any EventLoop
    /// The store; nil when values are not kept.
    let values: PersistedValues?

    init(context: DaemonContext, values: PersistedValues?, eventLoop: any EventLoop) {
        self.context = context
        self.values = values
        self.eventLoop = eventLoop
    }

    /// A Write Command or Signed Write was served: recorded when its value is persisted.
    func written(_ database: GATTDatabase, characteristic: CharacteristicIndex, value: [UInt8]) {
        values?.record(database, characteristic: characteristic, value: value, on: eventLoop)
    }

    /// Makes the persisted values among `writes` durable without changing the served values;
    /// nil when none is persisted. A failure also sends watchers `persist_failed`.
    func persist(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValueOutcome>? {
        guard let future = durable(writes, central: central) else { return nil }
        let db = context.core.database
        return future.map { committed -> PersistedValueOutcome in
            guard !committed.overtaken.isEmpty else { return .newest }
            return .overtaken(Set(writes.lazy.map(\.characteristic).filter {
                db.contains($0) && committed.overtaken[PersistedValues.key(db[$0])] != nil
            }))
        }
    }

    private func durable(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValues.Committed>? {
        let db = context.core.database
        guard let values, writes.contains(where: { db.contains($0.characteristic) && db[$0.characteristic].valueSource == .persisted })
        else { return nil }
        let future = values.commit(db, writes, on: eventLoop)
        future.whenFailure { [context] error in
            for w in writes where db.contains(w.characteristic) {
                context.emit(.persistFailed(central: central, characteristic: db[w.characteristic].displayName, message: "\(error)"))
            }
        }
        return future
    }

    /// Answers a commit's values (`DeferredAccess.commit`) once they are durable; Unlikely Error
    /// when they cannot be. With none persisted (or no state directory) it is answered at once,
    /// in this turn of the stack. A durable value whose request is gone (its central left) is
    /// still put in place. Putting them in place is no new write (`PersistedValues.applying`),
    /// and a value overtaken by a newer Write Command leaves that newer one served.
    func answerCommit(_ request: PendingRequestID, values writes: [PersistedValue], central: String?) {
        guard let values, let future = durable(writes, central: central) else {
            _ = context.respond(to: request, result: .success([]))
            return
        }
        let handedOut = context.core.database
        future.whenComplete { [context] result in
            switch result {
            case .success(let committed):
                let db = context.core.database
                // A reload or a runtime service meanwhile may have moved the characteristics.
                let writes = Self.sameCharacteristics(writes, from: handedOut, in: db)
                values.applying(db, writes) {
                    if !context.respond(to: request, result: .success([])) {
                        for w in writes { _ = context.core.setValue(characteristic: w.characteristic, value: w.value) }
                    }
                }
                for w in writes where db.contains(w.characteristic) {
                    if let newer = committed.overtaken[PersistedValues.key(db[w.characteristic])] {
                        _ = context.core.setValue(characteristic: w.characteristic, value: newer)
                    }
                }
            case .failure:
                _ = context.respond(to: request, result: .failure(.unlikelyError))
            }
        }
    }

    /// `writes` (indices into `old`) as indices into `new`: the persisted characteristic with
    /// the same key (config id, else UUID); one that is gone is left out.
    static func sameCharacteristics(_ writes: [PersistedValue], from old: GATTDatabase, in new: GATTDatabase) -> [PersistedValue] {
        if old.databaseHash == new.databaseHash { return writes }
        return writes.compactMap { w in
            guard old.contains(w.characteristic) else { return nil }
            let key = PersistedValues.key(old[w.characteristic])
            guard let i = new.characteristicIndices.first(where: { new[$0].valueSource == .persisted && PersistedValues.key(new[$0]) == key }) else { return nil }
            return PersistedValue(characteristic: i, value: w.value)
        }
    }
}
