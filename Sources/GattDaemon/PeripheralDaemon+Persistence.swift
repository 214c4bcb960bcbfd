import GattCore
import NIOCore

// What the daemon makes durable before it is acknowledged (`PersistenceService`), and a commit
// of the ATT server's (`DeferredAccess.commit`), which carries a bonded central's client state
// too (`BondService`).
extension PeripheralDaemon {
    /// Makes the persisted values among `writes` durable without changing the served values;
    /// nil when none is persisted. (`setValue`/`notify` then serve a persisted value: no new
    /// write, nothing to record.)
    public func persist(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValueOutcome>? {
        persistence.persist(writes, central: central)
    }

    /// Answers a commit once, when a bonded central's client state is saved and the values are
    /// durable; Unlikely Error when either cannot be.
    func answerCommit(_ request: PendingRequestID, _ id: ConnectionID, values writes: [PersistedValue], clientState: GATTClientState?, central: String?) {
        if let clientState, !bonds.commit(clientState, of: id) {
            _ = respond(to: request, result: .failure(.unlikelyError))
            return
        }
        persistence.answerCommit(request, values: writes, central: central)
    }
}
