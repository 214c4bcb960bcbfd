/// An AD type of an advertising data structure (Core Specification Supplement
/// Part A §1; Assigned Numbers §2.3).
public struct AdvertisingDataType: RawRepresentable, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let flags = Self(rawValue: 0x01)
    public static let incompleteList16BitServiceUUIDs = Self(rawValue: 0x02)
    public static let completeList16BitServiceUUIDs = Self(rawValue: 0x03)
    public static let incompleteList32BitServiceUUIDs = Self(rawValue: 0x04)
    public static let completeList32BitServiceUUIDs = Self(rawValue: 0x05)
    public static let incompleteList128BitServiceUUIDs = Self(rawValue: 0x06)
    public static let completeList128BitServiceUUIDs = Self(rawValue: 0x07)
    public static let shortenedLocalName = Self(rawValue: 0x08)
    public static let completeLocalName = Self(rawValue: 0x09)
    public static let txPowerLevel = Self(rawValue: 0x0A)
    public static let serviceData16BitUUID = Self(rawValue: 0x16)
    public static let appearance = Self(rawValue: 0x19)
    public static let serviceData32BitUUID = Self(rawValue: 0x20)
    public static let serviceData128BitUUID = Self(rawValue: 0x21)
    public static let manufacturerSpecificData = Self(rawValue: 0xFF)
}
