import GattCore

/// One bond in the `bonds` reply.
public struct ControlBond: Sendable, Equatable {
    /// The central's identity address.
    public var central: BluetoothAddress
    public var addressType: BluetoothAddressType
    public var authenticated: Bool
    public var secureConnections: Bool
    public var keySize: Int
    /// Whether the central distributed its IRK (its RPAs are recognised).
    public var irk: Bool
    /// Seconds since the Unix epoch.
    public var created: Int
    /// When it last encrypted a link with the bond (seconds since the Unix epoch).
    public var lastSeen: Int?

    public init(central: BluetoothAddress, addressType: BluetoothAddressType, authenticated: Bool, secureConnections: Bool, keySize: Int, irk: Bool, created: Int, lastSeen: Int? = nil) {
        self.lastSeen = lastSeen
        self.central = central
        self.addressType = addressType
        self.authenticated = authenticated
        self.secureConnections = secureConnections
        self.keySize = keySize
        self.irk = irk
        self.created = created
    }

    var json: JSONText {
        .object([
            ("central", .string(central.description)),
            ("address_type", .string(addressType.rawValue & 0x01 == 0 ? "public" : "random")),
            ("authenticated", .bool(authenticated)), ("secure_connections", .bool(secureConnections)),
            ("key_size", .int(keySize)), ("irk", .bool(irk)), ("created", .int(created)),
        ] + (lastSeen.map { [("last_seen", JSONText.int($0))] } ?? []))
    }

    init(_ o: ControlObjectReader) throws(ControlError) {
        let s = try o.string("central")
        guard let a = BluetoothAddress(s) else {
            throw ControlError(.invalidValue, "\(o.path("central")) must be a Bluetooth address (AA:BB:CC:DD:EE:FF), got \"\(s)\"")
        }
        central = a
        addressType = try o.oneOf("address_type", ["public", "random"]) == "public" ? .public : .random
        authenticated = try o.bool("authenticated")
        secureConnections = try o.bool("secure_connections")
        keySize = try o.count("key_size")
        irk = try o.bool("irk")
        created = try o.count("created")
        lastSeen = o.has("last_seen") ? try o.count("last_seen") : nil
    }
}
