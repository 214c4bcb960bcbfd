/// One read or write of one attribute, asked by a back end that runs ATT itself (bluetoothd
/// through its D-Bus API): GATT-level, with no PDU, MTU or bearer. The ATT server answers it
/// with the same rules as the PDU path (permissions, value sources, deferred accesses,
/// commits before a persisted write is acknowledged): `ATTServer.access(_:id:from:now:)`.
public enum GATTAccess: Sendable, Equatable {
    /// The value from `offset` (the back end cuts it to the central's ATT_MTU).
    case read(AttributeHandle, offset: Int)
    /// A write of `value` at `offset` (a long write's part); `withResponse` false: a Write
    /// Command, never answered with an error.
    case write(AttributeHandle, [UInt8], offset: Int, withResponse: Bool)
}
