import GattCore

/// A live LE connection as the host sees it.
public struct HostConnection: Sendable, Equatable {
    public let handle: UInt16
    public let peerAddress: BluetoothAddress
    public let peerAddressType: BluetoothAddressType
    public var security: SecurityLevel = .low
    /// The encryption key size in octets while encrypted, when known.
    public var keySize: Int?
    /// What the key the last LE Long Term Key Request was answered with gives the link.
    var pendingSecurity: SMPLinkSecurity?
    public var id: ConnectionID { ConnectionID(handle) }
}
