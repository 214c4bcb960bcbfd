import GattCore
import NIOCore

/// What the control socket drives: the running peripheral, whatever its transport
/// (H4 `PeripheralDaemon`, the kernel transport). Every member is called on, and
/// every event is delivered on, the implementation's event loop (`ControlServer`
/// runs its sockets on that same loop).
///
/// Implementations persist values themselves (`setValue`/`notify` on a
/// `persist` characteristic), and translate their ATT server events with
/// `ControlEvent.from(_:database:central:)`.
public protocol PeripheralControl: AnyObject {
    /// The database being served: ids, properties, maximum lengths and values.
    var database: GATTDatabase { get }
    /// The connection of a central, by address; nil when not connected.
    func connection(of central: BluetoothAddress) -> ConnectionID?
    /// Sets the value and queues it to subscribers (`only`: that connection).
    func notify(characteristic: Int, value: [UInt8], only: ConnectionID?) -> NotifyResult
    /// Sets the value without notifying; false when out of range or too long.
    func setValue(characteristic: Int, value: [UInt8]) -> Bool
    func status() -> ControlStatus
    func setAdvertising(_ enabled: Bool)
    func disconnect(_ connection: ConnectionID)
    /// Answers a forwarded read/write; false when the request is unknown
    /// (never issued, answered, timed out, or its central left).
    func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool
    /// Makes the values of `"persist": true` characteristics among `writes` durable, without
    /// changing the served values; nil when none is persisted (or values are not kept).
    /// A failure also sends watchers `persist_failed` (`central`: who wrote, if a central).
    func persist(_ writes: [PersistedWrite], central: String?) -> EventLoopFuture<Void>?
    /// Whether at least one control client watches. Going to false must fail
    /// pending requests (`ATTServer.failPendingRequests(now:)`).
    func setControlClientAttached(_ attached: Bool)
    /// Where events go (set by `ControlServer`; nil when no socket).
    var controlEventHandler: ((ControlEvent) -> Void)? { get set }
}

/// The `status` reply.
public struct ControlStatus: Sendable, Equatable {
    public var advertising: Bool
    /// The controller's (identity) address.
    public var address: BluetoothAddress
    public var connections: [Central]

    public init(advertising: Bool, address: BluetoothAddress, connections: [Central]) {
        self.advertising = advertising
        self.address = address
        self.connections = connections
    }

    public struct Subscription: Sendable, Equatable {
        public var characteristic: String
        public var notify: Bool
        public var indicate: Bool
    }

    /// One connected central.
    public struct Central: Sendable, Equatable {
        public var address: BluetoothAddress
        public var addressType: BluetoothAddressType
        public var mtu: Int
        public var security: SecurityLevel
        public var subscriptions: [Subscription]
        /// Notifications/indications queued and not yet sent.
        public var queue: Int

        public init(address: BluetoothAddress, addressType: BluetoothAddressType, mtu: Int, security: SecurityLevel, subscriptions: [Subscription], queue: Int) {
            self.address = address
            self.addressType = addressType
            self.mtu = mtu
            self.security = security
            self.subscriptions = subscriptions
            self.queue = queue
        }

        /// Reads MTU, subscriptions and queue of `id` from the ATT server.
        public init(address: BluetoothAddress, addressType: BluetoothAddressType, security: SecurityLevel, id: ConnectionID, att: ATTServer) {
            let db = att.database
            var subs: [Subscription] = []
            for (i, c) in db.characteristics.enumerated() {
                let bits = att.clientConfiguration(for: id, characteristic: i) ?? 0
                if bits & 0x0003 != 0 {
                    subs.append(Subscription(characteristic: c.displayName, notify: bits & 0x0001 != 0, indicate: bits & 0x0002 != 0))
                }
            }
            self.init(address: address, addressType: addressType, mtu: att.mtu(for: id) ?? 23, security: security,
                      subscriptions: subs, queue: att.queuedUpdates(for: id) ?? 0)
        }
    }

    /// The `{"ok":true,...}` fields.
    public var fields: [(String, JSONText)] {
        [
            ("advertising", .bool(advertising)),
            ("address", .string(address.description)),
            ("connections", .array(connections.map { c in
                .object([
                    ("central", .string(c.address.description)),
                    ("address_type", .string(c.addressType.rawValue & 0x01 == 0 ? "public" : "random")),
                    ("mtu", .int(c.mtu)),
                    ("security", .string(c.security.description)),
                    ("subscriptions", .array(c.subscriptions.map { s in
                        .object([("characteristic", .string(s.characteristic)), ("notify", .bool(s.notify)), ("indicate", .bool(s.indicate))])
                    })),
                    ("queue", .int(c.queue)),
                ])
            })),
        ]
    }
}
