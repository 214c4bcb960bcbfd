import GattCore

/// LE Connection Complete, LE Enhanced Connection Complete [v1] and [v2]
/// (Vol 4 Part E §7.7.65.1, §7.7.65.10). The enhanced-only fields are nil for the
/// legacy event; `advertisingHandle`/`syncHandle` are set only by [v2].
public struct LEConnectionComplete: Sendable, Hashable {
    public var status: HCIStatus
    public var handle: UInt16
    public var role: HCIConnectionRole
    public var peerAddressType: BluetoothAddressType
    public var peerAddress: BluetoothAddress
    /// Enhanced only: the local resolvable private address in use, or 00:00:00:00:00:00.
    public var localResolvablePrivateAddress: BluetoothAddress?
    /// Enhanced only: the peer's resolvable private address, or 00:00:00:00:00:00.
    public var peerResolvablePrivateAddress: BluetoothAddress?
    /// Connection interval in 1.25 ms units.
    public var connectionInterval: UInt16
    /// Peripheral latency in connection events.
    public var peripheralLatency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8
    /// [v2] only.
    public var advertisingHandle: UInt8?
    /// [v2] only.
    public var syncHandle: UInt16?

    public init(
        status: HCIStatus, handle: UInt16, role: HCIConnectionRole, peerAddressType: BluetoothAddressType,
        peerAddress: BluetoothAddress, localResolvablePrivateAddress: BluetoothAddress? = nil,
        peerResolvablePrivateAddress: BluetoothAddress? = nil, connectionInterval: UInt16, peripheralLatency: UInt16,
        supervisionTimeout: UInt16, centralClockAccuracy: UInt8, advertisingHandle: UInt8? = nil, syncHandle: UInt16? = nil
    ) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.advertisingHandle = advertisingHandle
        self.syncHandle = syncHandle
    }
}
