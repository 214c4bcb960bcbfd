import GattCore
import GattDBus

/// An ATT error as the D-Bus error a `ReadValue`/`WriteValue` answers with, so that bluetoothd
/// sends the central that code (`dbus_error_to_att_ecode` in BlueZ 5.66's src/gatt-database.c).
/// BlueZ passes on only a few codes: the others reach the central as Unlikely Error (0x0E).
public enum BlueZGattError {
    public static func dbusError(_ error: ATTError) -> DBusError {
        switch error {
        // bluetoothd answers NotPermitted with the operation's own code (read or write).
        case .readNotPermitted, .writeNotPermitted: DBusError("org.bluez.Error.NotPermitted", error.name)
        case .insufficientAuthorization: DBusError("org.bluez.Error.NotAuthorized", error.name)
        case .invalidAttributeValueLength: DBusError("org.bluez.Error.InvalidValueLength", error.name)
        case .invalidOffset: DBusError("org.bluez.Error.InvalidOffset", error.name)
        case .requestNotSupported: DBusError("org.bluez.Error.NotSupported", error.name)
        case .procedureAlreadyInProgress: DBusError("org.bluez.Error.InProgress", error.name)
        // Not one of bluetoothd's names (nor Failed, whose text it reads as an application
        // error 0x80-0x9F): bluetoothd sends Unlikely Error.
        default: DBusError("org.gattd.Error.\(error.name)", "\(error) (bluetoothd sends the central unlikely_error)")
        }
    }

    /// The code the central receives for `error` through BlueZ 5.66.
    public static func codeSent(for error: ATTError) -> ATTError {
        switch error {
        case .readNotPermitted, .writeNotPermitted, .insufficientAuthorization, .invalidAttributeValueLength, .invalidOffset,
            .requestNotSupported, .procedureAlreadyInProgress:
            error
        default: .unlikelyError
        }
    }
}
