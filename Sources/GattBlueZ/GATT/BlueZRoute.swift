import GattCore
import GattDBus

/// How a method call to the application is answered: at once (the object tree's own
/// interfaces), or as a request for the GATT engine.
public enum BlueZRoute: Sendable, Equatable {
    case reply([DBusValue])
    case fail(DBusError)
    case attribute(BlueZAttributeRequest)
    /// bluetoothd set an attribute's `Handle`: it placed the attribute elsewhere than asked.
    case moved(path: String, asked: AttributeHandle, given: UInt16)
}
