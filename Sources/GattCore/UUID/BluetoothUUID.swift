/// A Bluetooth UUID: 16-bit, 32-bit or 128-bit, compared by its 128-bit value
/// through the Bluetooth Base UUID (Core Spec Vol 3 Part B §2.5.1).
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes of the full UUID in big-endian (canonical string) order.
    public let bytes: [UInt8]

    /// 0000xxxx-0000-1000-8000-00805F9B34FB, big-endian.
    static let baseBytes: [UInt8] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
        0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB,
    ]

    public init(uuid16: UInt16) { self.init(uuid32: UInt32(uuid16)) }

    public init(uuid32: UInt32) {
        var b = Self.baseBytes
        b[0] = UInt8(truncatingIfNeeded: uuid32 >> 24)
        b[1] = UInt8(truncatingIfNeeded: uuid32 >> 16)
        b[2] = UInt8(truncatingIfNeeded: uuid32 >> 8)
        b[3] = UInt8(truncatingIfNeeded: uuid32)
        self.init(unchecked: b)
    }

    /// From 16 big-endian bytes.
    public init?(bigEndianBytes: [UInt8]) {
        guard bigEndianBytes.count == 16 else { return nil }
        self.init(unchecked: bigEndianBytes)
    }

    init(unchecked: [UInt8]) { self.bytes = unchecked }

    /// From the little-endian bytes carried in PDUs (2, 4 or 16 bytes).
    public init?<C: Collection>(littleEndian data: C) where C.Element == UInt8 {
        let le = Array(data)
        switch le.count {
        case 2: self.init(uuid16: UInt16(le[0]) | UInt16(le[1]) << 8)
        case 4: self.init(uuid32: UInt32(le[0]) | UInt32(le[1]) << 8 | UInt32(le[2]) << 16 | UInt32(le[3]) << 24)
        case 16: self.init(bigEndianBytes: le.reversed())
        default: return nil
        }
    }

    /// Parses "180D", "0000180D" (32-bit) or a canonical 128-bit string
    /// ("0000180d-0000-1000-8000-00805f9b34fb"); case-insensitive.
    public init?(_ string: String) {
        let s = string.trimmingCharacters(in: " ")
        if s.count == 4 || s.count == 8 {
            guard s.allSatisfy({ $0.isHexDigit }), let v = UInt32(s, radix: 16) else { return nil }
            self.init(uuid32: v)
            return
        }
        guard s.count == 36 else { return nil }
        let chars = Array(s)
        for i in [8, 13, 18, 23] where chars[i] != "-" { return nil }
        let hex = chars.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map { $0.element }
        guard hex.count == 32, hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        var i = 0
        while i < 32 {
            out.append(UInt8(String(hex[i...i + 1]), radix: 16)!)
            i += 2
        }
        self.init(bigEndianBytes: out)
    }

    /// True when the UUID is derived from the Bluetooth Base UUID.
    public var isBased: Bool { Array(bytes[4...]) == Array(Self.baseBytes[4...]) }

    /// The 16-bit alias, when this UUID is one.
    public var uuid16: UInt16? {
        guard isBased, bytes[0] == 0, bytes[1] == 0 else { return nil }
        return UInt16(bytes[2]) << 8 | UInt16(bytes[3])
    }

    /// The 32-bit alias, when this UUID is one (16-bit UUIDs are also 32-bit ones).
    public var uuid32: UInt32? {
        guard isBased else { return nil }
        return UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    /// The shortest form ATT allows: 2 bytes for 16-bit UUIDs, otherwise 16
    /// (ATT carries no 32-bit UUIDs), little-endian.
    public var attBytes: [UInt8] {
        if let u = uuid16 { return [UInt8(u & 0xFF), UInt8(u >> 8)] }
        return bytes.reversed()
    }

    /// All 16 bytes little-endian (as in 128-bit PDU fields and advertising data).
    public var littleEndian128: [UInt8] { bytes.reversed() }

    /// True when ATT can carry it in 2 bytes.
    public var is16Bit: Bool { uuid16 != nil }

    /// "180D" for 16-bit, "0000FEED"-style 8 digits for 32-bit, canonical lowercase otherwise.
    public var description: String {
        if let u = uuid16 { return hex(UInt32(u), digits: 4) }
        if let u = uuid32 { return hex(u, digits: 8) }
        return canonicalString
    }

    /// Always the full 36-character form, lowercase.
    public var canonicalString: String {
        let h = bytes.map { b -> String in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        let c = Array(h)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-"
            + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    private func hex(_ v: UInt32, digits: Int) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - s.count)) + s
    }
}

extension BluetoothUUID: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: UInt16) { self.init(uuid16: value) }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return String(s)
    }
}
