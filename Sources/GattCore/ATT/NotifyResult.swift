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
