/// A 48-bit Bluetooth device address (BD_ADDR, Core Spec Vol 2 Part B §1.2; LE
/// addresses Vol 6 Part B §1.3). Carried little-endian on the wire, printed most
/// significant byte first: "AA:BB:CC:DD:EE:FF".
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
    /// The six bytes in display order (most significant first).
    public let bytes: [UInt8]

    public static let zero = BluetoothAddress(unchecked: [0, 0, 0, 0, 0, 0])

    package init(unchecked: [UInt8]) { self.bytes = unchecked }

    /// From six bytes in display order (most significant first).
    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    /// From the six little-endian bytes of an HCI parameter.
    public init?<C: Collection>(littleEndian data: C) where C.Element == UInt8 {
        let le = Array(data)
        guard le.count == 6 else { return nil }
        self.bytes = le.reversed()
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (case-insensitive; ':' or '-' separators).
    public init?(_ string: String) {
        let parts = string.split(whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard p.count == 2, p.allSatisfy(\.isHexDigit), let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        self.bytes = out
    }

    /// The six bytes as carried in HCI parameters (least significant first).
    public var littleEndianBytes: [UInt8] { bytes.reversed() }

    public var description: String {
        bytes.map { b in
            let s = String(b, radix: 16, uppercase: true)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: ":")
    }
}

/// An LE address type as carried in HCI parameters (Core Spec Vol 4 Part E §7.7.65.1
/// and §7.7.65.10). Values other than the named ones are preserved.
public struct BluetoothAddressType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let `public` = Self(rawValue: 0x00)
    public static let random = Self(rawValue: 0x01)
    /// Public identity address (resolved from an RPA by the controller).
    public static let publicIdentity = Self(rawValue: 0x02)
    /// Random (static) identity address (resolved from an RPA by the controller).
    public static let randomIdentity = Self(rawValue: 0x03)

    public var description: String {
        switch rawValue {
        case 0x00: "public"
        case 0x01: "random"
        case 0x02: "public identity"
        case 0x03: "random identity"
        default: "address type \(codecHex(rawValue, digits: 2))"
        }
    }
}

extension BluetoothAddress {
    /// A random static address (Core Spec Vol 6 Part B §1.3.2.1: the two most significant
    /// bits 0b11, the other 46 bits neither all 0 nor all 1) derived from `address`, so the
    /// same controller always gets the same one.
    public static func staticRandom(derivedFrom address: BluetoothAddress) -> BluetoothAddress {
        var b = address.bytes.reversed().map { $0 ^ 0xA5 }
        b[0] |= 0xC0
        let rest = [b[0] & 0x3F] + b[1...]
        if rest.allSatisfy({ $0 == 0 }) { b[5] = 0x01 }
        if b[0] & 0x3F == 0x3F && b[1...].allSatisfy({ $0 == 0xFF }) { b[5] = 0xFE }
        return BluetoothAddress(unchecked: b)
    }
}
