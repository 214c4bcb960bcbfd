/// Something that happened that the server's caller cares about.
public enum ATTServerEvent: Equatable, Sendable {
    /// The client's Exchange MTU set the bearer's ATT_MTU.
    case mtuExchanged(ConnectionID, mtu: Int)
    /// A client wrote a Client Characteristic Configuration descriptor.
    case subscriptionChanged(ConnectionID, characteristic: CharacteristicIndex, notify: Bool, indicate: Bool)
    /// A client wrote a `.stored` or `.persisted` characteristic value (Write
    /// Request/Command, Signed Write, or Execute Write); `value` is the new stored value.
    case written(ConnectionID, characteristic: CharacteristicIndex, value: [UInt8])
    /// A client wrote a writable descriptor other than a CCCD (e.g. the User Description).
    case descriptorWritten(ConnectionID, handle: AttributeHandle, value: [UInt8])
    /// A client wrote the Client Supported Features characteristic (per connection).
    case clientFeaturesChanged(ConnectionID, features: [UInt8])
    /// A read or write the server cannot answer alone: answer it with
    /// `respond(to:result:now:)`. Until then the bearer's later PDUs wait, in order.
    case deferredAccess(id: PendingRequestID, ConnectionID, DeferredAccess)
    /// A Write Command or Signed Write Command to a `.deferred` characteristic: no answer.
    case writeCommand(ConnectionID, characteristic: CharacteristicIndex, value: [UInt8])
    /// A deferred access got no answer within its timeout (`deferredAccessTimeout`,
    /// `commitTimeout`) or its answerer went away (`failDeferredAccesses(now:)`): the
    /// client was sent Unlikely Error and a later answer is refused.
    case requestTimedOut(id: PendingRequestID)
    case indicationConfirmed(ConnectionID, characteristic: CharacteristicIndex)
    /// An indication was not confirmed in 30 s; the bearer is being closed.
    case indicationTimedOut(ConnectionID, characteristic: CharacteristicIndex)
    /// An Enhanced ATT bearer closed (`closeBearer`) after its indication was sent and before
    /// the client confirmed it: that indication will never be confirmed, and is not re-sent
    /// (the client may have received it). Not emitted when the connection goes (`disconnect`)
    /// nor after `.indicationTimedOut`, which says the same.
    case indicationUnconfirmed(ConnectionID, characteristic: CharacteristicIndex)
    /// Every queue that made `notify` return `.busy` has room again
    /// (`peripheralManagerIsReadyToUpdateSubscribers`).
    case ready
}
