import Crypto
import CryptoExtras

public struct CharacteristicDefinition: Sendable, Equatable {
    public var id: String?
    public var uuid: BluetoothUUID
    public var properties: CharacteristicProperties
    public var permissions: AttributePermissions
    public var value: [UInt8]
    public var maxLength: Int
    public var userDescription: String?
    public var valueSource: CharacteristicValueSource
    public var descriptors: [DescriptorDefinition]
    /// `"value": {"l2cap_psm": id}`: the value is that L2CAP channel's PSM (2 bytes, little-endian).
    public var l2capChannel: String? = nil
    public init(
        id: String? = nil, uuid: BluetoothUUID, properties: CharacteristicProperties,
        permissions: AttributePermissions? = nil, value: [UInt8] = [], maxLength: Int = 512,
        userDescription: String? = nil, valueSource: CharacteristicValueSource = .stored,
        descriptors: [DescriptorDefinition] = []
    ) {
        self.id = id; self.uuid = uuid; self.properties = properties
        self.permissions = permissions ?? Self.defaultPermissions(for: properties)
        self.value = value; self.maxLength = maxLength; self.userDescription = userDescription
        self.valueSource = valueSource; self.descriptors = descriptors
    }

    /// Permissions implied by properties when the config gives none: readable
    /// when readable, writeable when writable, encryption when the property says so.
    public static func defaultPermissions(for p: CharacteristicProperties) -> AttributePermissions {
        var perms: AttributePermissions = []
        if p.contains(.read) { perms.insert(.readable) }
        if !p.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites, .reliableWrite]) {
            perms.insert(.writeable)
        }
        return perms
    }
}
