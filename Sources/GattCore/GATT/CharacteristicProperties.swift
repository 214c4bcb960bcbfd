/// Characteristic properties, with Core Bluetooth's names and bit values
/// (`CBCharacteristicProperties`). The low byte is the Characteristic
/// Properties field of the declaration (Core Spec Vol 3 Part G §3.3.1.1); the
/// higher bits are gattd's: two Core Bluetooth bits and the two Characteristic
/// Extended Properties bits (§3.3.3.1).
public struct CharacteristicProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let broadcast = Self(rawValue: 0x0001)
    public static let read = Self(rawValue: 0x0002)
    public static let writeWithoutResponse = Self(rawValue: 0x0004)
    public static let write = Self(rawValue: 0x0008)
    public static let notify = Self(rawValue: 0x0010)
    public static let indicate = Self(rawValue: 0x0020)
    public static let authenticatedSignedWrites = Self(rawValue: 0x0040)
    public static let extendedProperties = Self(rawValue: 0x0080)
    public static let notifyEncryptionRequired = Self(rawValue: 0x0100)
    public static let indicateEncryptionRequired = Self(rawValue: 0x0200)
    /// Extended property: Reliable Write (Prepare/Execute across handles).
    public static let reliableWrite = Self(rawValue: 0x0400)
    /// Extended property: Writable Auxiliaries (the User Description is writable).
    public static let writableAuxiliaries = Self(rawValue: 0x0800)

    /// The config/Core Bluetooth names, in bit order.
    public static let names: [(String, CharacteristicProperties)] = [
        ("broadcast", .broadcast), ("read", .read), ("write_without_response", .writeWithoutResponse),
        ("write", .write), ("notify", .notify), ("indicate", .indicate),
        ("authenticated_signed_writes", .authenticatedSignedWrites),
        ("extended_properties", .extendedProperties),
        ("notify_encryption_required", .notifyEncryptionRequired),
        ("indicate_encryption_required", .indicateEncryptionRequired),
        ("reliable_write", .reliableWrite), ("writable_auxiliaries", .writableAuxiliaries),
    ]

    /// The one-byte Characteristic Properties field of the declaration; the
    /// Extended Properties bit is set whenever an extended property is.
    public var declarationByte: UInt8 {
        var b = UInt8(truncatingIfNeeded: rawValue & 0x00FF)
        // notify/indicate_encryption_required imply notify/indicate.
        if contains(.notifyEncryptionRequired) { b |= 0x10 }
        if contains(.indicateEncryptionRequired) { b |= 0x20 }
        if !extendedPropertiesValue.isEmpty { b |= 0x80 }
        return b
    }

    /// The Characteristic Extended Properties descriptor bits (0 when none).
    public var extendedPropertiesValue: [UInt8] {
        var v: UInt16 = 0
        if contains(.reliableWrite) { v |= 0x0001 }
        if contains(.writableAuxiliaries) { v |= 0x0002 }
        return v == 0 ? [] : [UInt8(v & 0xFF), UInt8(v >> 8)]
    }

    public var canNotify: Bool { !isDisjoint(with: [.notify, .notifyEncryptionRequired]) }
    public var canIndicate: Bool { !isDisjoint(with: [.indicate, .indicateEncryptionRequired]) }

    /// Names of the set bits, in bit order.
    public var nameList: [String] { Self.names.filter { contains($0.1) }.map { $0.0 } }
}
