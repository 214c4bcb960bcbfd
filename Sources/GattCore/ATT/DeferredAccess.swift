/// What a deferred access asks its answerer (`ATTServerEvent.deferredAccess`).
public enum DeferredAccess: Equatable, Sendable {
    /// Read or Read Blob of a `.deferred` value: answer with the value from `offset`
    /// (cut to the bearer's ATT_MTU) or an ATT error.
    case read(characteristic: CharacteristicIndex, offset: Int)
    /// Write Request of a `.deferred` value, or one of them assembled from Prepare Writes by
    /// an Execute Write: answer success (its bytes are ignored) or an ATT error. The server
    /// stores nothing.
    case write(characteristic: CharacteristicIndex, value: [UInt8], offset: Int)
    /// A Write Request or Execute Write is acknowledged only once the answerer made its
    /// changes last: the new `.persisted` values and, for a bonded client, its client
    /// state after the writes (CCCDs and Client Supported Features persist across
    /// connections, Vol 3 Part G §3.3.3.3). Success applies every write of the request
    /// (`.written` etc. follow) and sends its response; a failure is sent as that ATT error
    /// (e.g. Unlikely Error) and nothing is stored. Never failed by `failDeferredAccesses(now:)`.
    case commit(values: [PersistedValue], clientState: GATTClientState?)
}
