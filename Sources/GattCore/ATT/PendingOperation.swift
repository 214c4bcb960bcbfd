/// A request of a bearer waiting for its deferred accesses (`ATTServerEvent.deferredAccess`).
struct PendingOperation: Sendable {
    enum Kind: Sendable {
        /// Read or Read Blob of a `.deferred` value.
        case read(ATTOpcode)
        /// Write Request of a `.deferred` value.
        case write
        /// Execute Write with `.deferred` values in it: the server's own writes are
        /// applied (or committed) only when every deferred write succeeded.
        case execute(storedWrites: [(AttributeHandle, [UInt8])])
        /// A Write Request (`op` .writeRequest) or Execute Write (.executeWriteRequest)
        /// waiting for its commit; `writes` are applied on success.
        case commit(ATTOpcode, writes: [(AttributeHandle, [UInt8])])
    }
    var kind: Kind
    /// Whether it waits for a commit (never failed when the answerer of reads and writes leaves).
    var isCommit: Bool {
        if case .commit = kind { return true }
        return false
    }
    /// The handle reported in an error response when the request fails or times out.
    var handle: AttributeHandle
    /// Deferred accesses still unanswered, with the handle each concerns.
    var waiting: [(id: PendingRequestID, handle: AttributeHandle)]
    var deadline: Duration

    /// The request it answers (what its Error Response names).
    var requestOpcode: ATTOpcode {
        switch kind {
        case .read(let op): op
        case .write: .writeRequest
        case .execute: .executeWriteRequest
        case .commit(let op, _): op
        }
    }

    /// The answer `result` to its deferred access about `handle` (on a bearer of ATT_MTU
    /// `mtu`, all its other accesses answered): what to send, applying the writes a commit
    /// waited for, or, for an Execute Write, finishing its own writes (which may wait for a
    /// commit in turn).
    func answered(
        _ result: Result<[UInt8], ATTError>, handle: AttributeHandle, mtu: Int, writes: ATTWriteRequests,
        database: inout GATTDatabase, client: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]
    ) -> ATTRequestOutcome {
        switch (kind, result) {
        case (_, .failure(let err)):
            return .error(requestOpcode, handle, err)
        case (.read(let op), .success(let value)):
            let part = Array(value.prefix(mtu - 1))
            return .respond(op == .readRequest ? .readResponse(value: part) : .readBlobResponse(value: part))
        case (.write, .success):
            return .respond(.writeResponse)
        case (.execute(let storedWrites), .success):
            return writes.finish(storedWrites, .executeWriteRequest, database: &database, client: &client, id, outputs: &outputs)
        case (.commit(let op, let committed), .success):
            for (h, v) in committed { writes.rules.apply(h, v, database: &database, client: &client, id, into: &outputs) }
            return .respond(op == .writeRequest ? .writeResponse : .executeWriteResponse)
        }
    }
}
