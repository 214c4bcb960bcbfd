/// The BlueZ back end: gattd beside bluetoothd, over its D-Bus API (docs/bluez.md).
public enum BlueZ {
    /// bluetoothd's bus name.
    public static let service = "org.bluez"
}
