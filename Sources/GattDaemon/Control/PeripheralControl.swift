import GattCore
// The protocol's types are part of this API (and of everything that drives it).
@_exported import GattControlProtocol
import NIOCore

/// What became of a persisted write once durable (`PeripheralControl.persist`).
public enum PersistedValueOutcome: Sendable, Equatable {
    /// The newest value: serve it.
    case newest
    /// These characteristics' newer values are served already (and saved after these):
    /// leave them; the others of the write are the newest.
    case overtaken(Set<CharacteristicIndex>)
}

/// What the control socket drives: the running peripheral (`PeripheralDaemon`), whatever
/// its transport (the H4 host or the kernel's stack). Every member is called on, and
/// every event is delivered on, the implementation's event loop (`ControlServer`
/// runs its sockets on that same loop).
///
/// A `persist` characteristic's value is made durable first (`persist`), then served
/// (`setValue`/`notify`, which do not save it again). Implementations translate their
/// ATT server events with `ControlEvent.from(_:database:central:)`.
public protocol PeripheralControl: AnyObject {
    /// The database being served: ids, properties, maximum lengths and values.
    var database: GATTDatabase { get }
    /// The connection of a central, by address; nil when not connected.
    func connection(of central: BluetoothAddress) -> ConnectionID?
    /// Sets the value and queues it to subscribers (`only`: that connection).
    func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID?) -> NotifyResult
    /// Sets several values and queues them to subscribers at once, all or nothing: a
    /// Multiple Handle Value Notification where the client supports it (`only`: that connection).
    func notify(values: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?) -> NotifyResult
    /// Sets the value without notifying; false when out of range or too long.
    func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool
    func status() -> ControlStatus
    /// The `advertise` op for one set (nil: the primary set).
    func setAdvertising(_ enabled: Bool, set: String?)
    /// The `advertising_data` op for one set (nil: the primary set): nil when taken (and on
    /// the air if the set is), else why not, the set left as it was.
    func setAdvertisingData(_ update: AdvertisingDataUpdate, set: String?) -> AdvertisingDataUpdateError?
    /// The advertising sets' ids, the primary set's first.
    var advertisingSetIDs: [String] { get }
    func disconnect(_ connection: ConnectionID)
    /// Answers a forwarded read/write; false when the request is unknown
    /// (never issued, answered, timed out, or its central left).
    func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool
    /// Makes the values of `"persist": true` characteristics among `writes` durable, without
    /// changing the served values; nil when none is persisted (or values are not kept).
    /// `.overtaken`: durable, but for the characteristics it names a newer value (a central's
    /// Write Command that came after) is served already: leave those. A failure also sends watchers `persist_failed`
    /// (`central`: who wrote, if a central).
    func persist(_ writes: [PersistedValue], central: String?) -> EventLoopFuture<PersistedValueOutcome>?
    /// Whether at least one control client answers requests. Going to false must fail the
    /// outstanding ones (`ATTServer.failDeferredAccesses(now:)`).
    func setControlClientAttached(_ attached: Bool)
    /// Whether at least one control client watches, passively or as a responder (a person
    /// who can answer pairing prompts may be there). Going to false refuses pending prompts.
    func setControlWatched(_ watched: Bool)
    /// Starts a btsnoop capture into a new `file`, or stops it (nil): `capture` op.
    func capture(file: String?) -> ControlReply
    /// Where events go (set by `ControlServer`; nil when no socket).
    var controlEventHandler: ((ControlEvent) -> Void)? { get set }
    /// Answers the pairing prompt pending for `central` (nil: the only prompt waiting); nil
    /// when the answer was passed on.
    func respondToPairing(central: BluetoothAddress?, accept: Bool?, passkey: UInt32?, confirm: Bool?) -> PairingAnswerFailure?
    /// The bonds, oldest first.
    var bondList: [StoredBond] { get }
    /// Removes a bond and disconnects its central; false when there is none.
    func unbond(_ address: BluetoothAddress) -> Bool
}

extension ControlStatus.Central {
    /// Reads MTU, subscriptions and queue of `id` from the ATT server.
    public init(address: BluetoothAddress, addressType: BluetoothAddressType, security: SecurityLevel, id: ConnectionID, att: ATTServer) {
        let db = att.database
        var subs: [ControlStatus.Subscription] = []
        for i in db.characteristicIndices {
            let c = db[i]
            let bits = att.clientConfiguration(for: id, characteristic: i) ?? 0
            if bits & 0x0003 != 0 {
                subs.append(ControlStatus.Subscription(characteristic: c.displayName, notify: bits & 0x0001 != 0, indicate: bits & 0x0002 != 0))
            }
        }
        self.init(address: address, addressType: addressType, mtu: att.mtu(for: id) ?? 23, security: security,
                  subscriptions: subs, queue: att.queuedUpdates(for: id) ?? 0)
    }
}
