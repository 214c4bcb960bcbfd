/// A GATT-level access waiting for its deferred access's answer.
struct GATTPendingAccess: Sendable {
    enum Kind: Sendable {
        case read
        case write
        /// A persisted value's write, applied once its commit succeeded.
        case commit(AttributeHandle, [UInt8])
    }
    var id: GATTAccessID
    var connection: ConnectionID
    var kind: Kind
    var deadline: Duration
}
