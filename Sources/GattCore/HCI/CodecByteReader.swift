/// Little-endian field reader used by the HCI, L2CAP and SMP decoders.
///
/// It never traps: reading past the end yields zeros and sets `overran`. Decoders
/// check the exact length of a structure *before* reading it, so an overrun is
/// a decoder bug, not a property of the input.
package struct CodecByteReader {
    private let bytes: [UInt8]
    package private(set) var offset: Int = 0
    package private(set) var overran = false

    package init<C: Collection>(_ bytes: C) where C.Element == UInt8 { self.bytes = Array(bytes) }

    package var remaining: Int { max(0, bytes.count - offset) }

    package mutating func u8() -> UInt8 {
        guard offset < bytes.count else { overran = true; offset += 1; return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func i8() -> Int8 { Int8(bitPattern: u8()) }

    package mutating func u16() -> UInt16 { UInt16(u8()) | UInt16(u8()) << 8 }

    package mutating func u64() -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(u8()) << (8 * UInt64(i)) }
        return v
    }

    package mutating func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(u8()) }
        return out
    }

    /// Everything not read yet.
    package mutating func rest() -> [UInt8] { bytes(remaining) }

    package mutating func address() -> BluetoothAddress { BluetoothAddress(littleEndian: bytes(6)) ?? .zero }
}
