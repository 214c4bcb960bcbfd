/// Attribute types and GATT UUIDs used by the server (Assigned Numbers §3.5–3.8).
public enum GATTUUID {
    public static let primaryService: BluetoothUUID = 0x2800
    public static let secondaryService: BluetoothUUID = 0x2801
    public static let include: BluetoothUUID = 0x2802
    public static let characteristic: BluetoothUUID = 0x2803

    public static let extendedProperties: BluetoothUUID = 0x2900
    public static let userDescription: BluetoothUUID = 0x2901
    public static let clientCharacteristicConfiguration: BluetoothUUID = 0x2902
    public static let serverCharacteristicConfiguration: BluetoothUUID = 0x2903
    public static let presentationFormat: BluetoothUUID = 0x2904
    public static let aggregateFormat: BluetoothUUID = 0x2905

    public static let genericAccess: BluetoothUUID = 0x1800
    public static let genericAttribute: BluetoothUUID = 0x1801
    public static let deviceName: BluetoothUUID = 0x2A00
    public static let appearance: BluetoothUUID = 0x2A01
    public static let serviceChanged: BluetoothUUID = 0x2A05
    public static let clientSupportedFeatures: BluetoothUUID = 0x2B29
    public static let databaseHash: BluetoothUUID = 0x2B2A
    public static let serverSupportedFeatures: BluetoothUUID = 0x2B3A
}

/// Who answers a characteristic value's reads and writes (the config's `"handler"` and
/// `"persist"`).
public enum CharacteristicValueSource: Equatable, Sendable {
    /// The server keeps the value and answers reads and writes at once.
    case stored
    /// The config's `"persist": true`, the one name of the concept (`PersistedValue`,
    /// `PersistedValues`, docs/persistence.md): the server keeps the value; a Write Request or
    /// Execute Write changing it is acknowledged only once a `DeferredAccess.commit` of it
    /// succeeded (it is durable).
    case persisted
    /// Reads and writes are handed out as deferred accesses (`DeferredAccess.read`/`.write`);
    /// the server keeps no value of its own for them.
    case deferred
}
