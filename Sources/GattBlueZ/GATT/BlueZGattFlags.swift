import GattCore

/// gattd's properties and permissions as the `Flags` of BlueZ's `GattCharacteristic1` and
/// `GattDescriptor1` (doc/org.bluez.GattCharacteristic.rst; what `parse_chrc_flags` in
/// bluetoothd's src/gatt-database.c takes). bluetoothd enforces the security ones itself.
public enum BlueZGattFlags {
    /// A characteristic's flags: its properties, then what reading, writing and subscribing need.
    /// The Extended Properties descriptor follows from `reliable-write`/`writable-auxiliaries`
    /// (bluetoothd adds it, as it adds the CCCD for `notify`/`indicate`).
    public static func characteristic(_ c: Characteristic) -> [String] {
        var flags: [String] = []
        let p = c.properties
        let names: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "authenticated-signed-writes"),
            (.reliableWrite, "reliable-write"), (.writableAuxiliaries, "writable-auxiliaries"),
        ]
        for (bit, name) in names where p.contains(bit) { flags.append(name) }
        flags += security(c.permissions)
        if !p.isDisjoint(with: [.notifyEncryptionRequired, .indicateEncryptionRequired]) { flags.append("encrypt-notify") }
        return flags
    }

    /// A descriptor's flags: read and write as its permissions allow, and their security.
    public static func descriptor(_ permissions: AttributePermissions) -> [String] {
        var flags: [String] = []
        if permissions.contains(.readable) { flags.append("read") }
        if permissions.contains(.writeable) { flags.append("write") }
        return flags + security(permissions)
    }

    private static func security(_ permissions: AttributePermissions) -> [String] {
        var flags: [String] = []
        if permissions.contains(.readAuthenticationRequired) { flags.append("encrypt-authenticated-read") }
        else if permissions.contains(.readEncryptionRequired) { flags.append("encrypt-read") }
        if permissions.contains(.writeAuthenticationRequired) { flags.append("encrypt-authenticated-write") }
        else if permissions.contains(.writeEncryptionRequired) { flags.append("encrypt-write") }
        return flags
    }
}
