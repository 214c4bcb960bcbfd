import GattCore
import NIOCore

// Persisted values (`PersistedValues`, which owns `<state-dir>/values.json` and `values.log`
// and their group commit): what the daemon makes durable before it is acknowledged — a
// control `set`/`notify`, and the ATT server's commits (`DeferredAccess.commit`), which carry
// a bonded central's client state too (`BondCoordinator`).
extension PeripheralDaemon {
    /// Makes the persisted values among `writes` durable without changing the served values;
    /// nil when none is persisted. A failure also sends watchers `persist_failed`.
    /// (`setValue`/`notify` then serve a persisted value: no new write, nothing to record.)
    public func persist(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValueOutcome>? {
        guard let future = durable(writes, central: central) else { return nil }
        let db = database
        return future.map { committed -> PersistedValueOutcome in
            guard !committed.overtaken.isEmpty else { return .newest }
            return .overtaken(Set(writes.lazy.map(\.characteristic).filter {
                db.contains($0) && committed.overtaken[PersistedValues.key(db[$0])] != nil
            }))
        }
    }

    private func durable(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValues.Committed>? {
        let db = database
        guard let persisted, writes.contains(where: { db.contains($0.characteristic) && db[$0.characteristic].valueSource == .persisted })
        else { return nil }
        let future = persisted.commit(db, writes, on: eventLoop)
        future.whenFailure { error in
            for w in writes where db.contains(w.characteristic) {
                self.controlEventHandler?(.persistFailed(central: central, characteristic: db[w.characteristic].displayName, message: "\(error)"))
            }
        }
        return future
    }

    /// Answers a commit (`DeferredAccess.commit`) once, when a bonded central's client state is
    /// saved and the values are durable; Unlikely Error when either cannot be. Without a state
    /// directory (or a persisted value among them) it is answered at once, in this turn of the
    /// stack (no event-loop turn of its own). A durable value whose request is gone (its central left)
    /// is still put in place. Putting them in place is no new write (`PersistedValues.applying`),
    /// and a value overtaken by a newer Write Command leaves that newer one served.
    func answerCommit(_ request: PendingRequestID, _ id: ConnectionID, values writes: [PersistedValue], clientState: GATTClientState?, central: String?) {
        if let clientState, !bonds.commit(clientState, of: id) {
            _ = respond(to: request, result: .failure(.unlikelyError))
            return
        }
        guard let persisted, let future = durable(writes, central: central) else {
            _ = respond(to: request, result: .success([]))
            return
        }
        let handedOut = database
        future.whenComplete { result in
            switch result {
            case .success(let committed):
                let db = self.database
                // A reload or a runtime service meanwhile may have moved the characteristics.
                let writes = Self.sameCharacteristics(writes, from: handedOut, in: db)
                persisted.applying(db, writes) {
                    if !self.respond(to: request, result: .success([])) {
                        for w in writes { _ = self.core.setValue(characteristic: w.characteristic, value: w.value) }
                    }
                }
                for w in writes where db.contains(w.characteristic) {
                    if let newer = committed.overtaken[PersistedValues.key(db[w.characteristic])] {
                        _ = self.core.setValue(characteristic: w.characteristic, value: newer)
                    }
                }
            case .failure:
                _ = self.respond(to: request, result: .failure(.unlikelyError))
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
