/// Why the server asks the transport to close a bearer.
public enum ATTBearerCloseReason: Equatable, Sendable {
    /// An indication was not confirmed within the ATT transaction timeout
    /// (Core Spec Vol 3 Part F §3.3.3); no further PDUs may be sent on the bearer.
    case transactionTimeout
}

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

/// One value of a `DeferredAccess.commit`: the characteristic index and its complete new value.
public struct PersistedValue: Equatable, Sendable {
    public var characteristic: CharacteristicIndex
    public var value: [UInt8]
    public init(characteristic: CharacteristicIndex, value: [UInt8]) {
        self.characteristic = characteristic
        self.value = value
    }
}

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

/// Result of `ATTServer.notify(...)` (Core Bluetooth's `updateValue` return value).
public enum NotifyResult: Equatable, Sendable {
    /// Value stored; one PDU queued per subscribed connection (`count` may be 0).
    case queued(Int)
    /// A targeted subscriber's queue is full; nothing was changed. `.ready` follows.
    case busy
    /// Longer than the characteristic's maximum length; nothing was changed.
    case valueTooLong
    /// The characteristic has neither notify nor indicate; nothing was changed.
    case notNotifiable
    /// No such characteristic index.
    case unknownCharacteristic
}

/// Why `ATTServer.respond(to:result:now:)` refused an answer.
public enum ATTRespondError: Error, Equatable, Sendable {
    /// Never issued, already answered, timed out, or its connection is gone.
    case unknownRequest
}

/// Limits and timeouts of an `ATTServer`.
public struct ATTServerConfiguration: Equatable, Sendable {
    /// The server's Rx MTU announced in Exchange MTU (23...517).
    public var maxMTU: Int = 517
    /// Encrypted links with a shorter key get Insufficient Encryption Key Size (0x0C) for
    /// attributes that need encryption or authentication (Vol 3 Part C §10.3.1, 7–16 octets).
    public var minimumKeySize: Int = 7
    /// Notifications/indications each bearer may hold not yet pulled by the transport
    /// (plus indications waiting behind the outstanding one).
    public var maxQueuedUpdates: Int = 32
    /// Time the answerer has to answer a read or write deferred access.
    public var deferredAccessTimeout: Duration = .seconds(5)
    /// ATT transaction timeout for indications (§3.3.3).
    public var transactionTimeout: Duration = .seconds(30)
    /// Prepare Write queue limits per client.
    public var maxPreparedWrites: Int = 64
    public var maxPreparedBytes: Int = 4096
    /// PDUs held while a deferred access waits for its answer; beyond this
    /// a misbehaving client's extra PDUs are dropped.
    public var maxHeldPDUs: Int = 64
    /// Time the answerer has to answer a commit before the client gets Unlikely Error.
    public var commitTimeout: Duration = .seconds(30)
    public init() {}
}
