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

/// One AD structure: length (1 + data), AD type, data (Core Spec Vol 3 Part C §11).
public struct AdvertisingDataStructure: Sendable, Hashable {
    public var type: AdvertisingDataType
    public var data: [UInt8]

    public init(type: AdvertisingDataType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    /// Length byte, type, data.
    public var encoded: [UInt8] { [UInt8(truncatingIfNeeded: data.count + 1), type.rawValue] + data }

    /// Bytes this structure takes in a payload.
    public var encodedLength: Int { data.count + 2 }

    /// Splits an advertising or scan response payload into AD structures; nil if a
    /// length runs past the end. A zero length byte ends the significant part
    /// (Vol 3 Part C §11: the rest is padding).
    public static func parse(_ payload: [UInt8]) -> [AdvertisingDataStructure]? {
        var out: [AdvertisingDataStructure] = []
        var i = 0
        while i < payload.count {
            let length = Int(payload[i])
            if length == 0 { break }
            guard i + 1 + length <= payload.count else { return nil }
            out.append(AdvertisingDataStructure(type: AdvertisingDataType(rawValue: payload[i + 1]), data: Array(payload[(i + 2)..<(i + 1 + length)])))
            i += 1 + length
        }
        return out
    }
}
