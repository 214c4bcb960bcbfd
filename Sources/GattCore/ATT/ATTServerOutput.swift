/// What a server call asks its caller to do.
public enum ATTServerOutput: Equatable, Sendable {
    case event(ATTServerEvent)
    /// PDUs are queued on this bearer: pull them with `dequeueOutgoing(for:)`.
    case outgoingAvailable(BearerID)
    /// The transport must close this bearer (the bearer is already gone): the unenhanced
    /// bearer by disconnecting its connection (the client state is gone too), an Enhanced
    /// ATT bearer by disconnecting its L2CAP channel (the client and its other bearers stay).
    case closeBearer(BearerID, ATTBearerCloseReason)
    /// The answer to a GATT-level access (`access(_:id:from:now:)`): the value read (from
    /// its offset), an empty success for a write, or the ATT error.
    case gattAnswer(GATTAccessID, Result<[UInt8], ATTError>)
    /// A characteristic with GATT-level subscribers got a new value (`setGATTSubscribers`):
    /// the back end notifies or indicates it as each subscriber asked.
    case gattUpdate(AttributeHandle, [UInt8])
}
