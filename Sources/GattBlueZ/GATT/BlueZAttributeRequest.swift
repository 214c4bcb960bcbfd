import GattCore

/// What bluetoothd asks of one attribute of the application (its `ReadValue`, `WriteValue`...).
public enum BlueZAttributeRequest: Sendable, Equatable {
    case read(AttributeHandle, BlueZAccessOptions)
    case write(AttributeHandle, [UInt8], BlueZAccessOptions)
    /// The first central subscribed (`StartNotify`): BlueZ 5.66 says nothing of which.
    case startNotify(AttributeHandle)
    /// The last central unsubscribed.
    case stopNotify(AttributeHandle)
    /// A central confirmed an indication (`Confirm`).
    case confirm(AttributeHandle)
}
