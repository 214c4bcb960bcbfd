/// Little-endian field writer used by the HCI, L2CAP and SMP encoders.
package struct CodecByteWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 16) { bytes.reserveCapacity(capacity) }

    package mutating func u8(_ v: UInt8) { bytes.append(v) }
    package mutating func i8(_ v: Int8) { bytes.append(UInt8(bitPattern: v)) }
    package mutating func u16(_ v: UInt16) { bytes.append(UInt8(truncatingIfNeeded: v)); bytes.append(UInt8(truncatingIfNeeded: v >> 8)) }
    /// The low 24 bits, little-endian (advertising intervals, Vol 4 Part E §7.8.53).
    package mutating func u24(_ v: UInt32) { u16(UInt16(truncatingIfNeeded: v)); bytes.append(UInt8(truncatingIfNeeded: v >> 16)) }
    package mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
    package mutating func append<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }
    package mutating func address(_ a: BluetoothAddress) { bytes.append(contentsOf: a.littleEndianBytes) }
}

/// "0x0C" / "0x2006" style hex for log and error texts.
package func codecHex<T: BinaryInteger>(_ v: T, digits: Int) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: max(0, digits - s.count)) + s
}
