/// Reads little-endian fields from a PDU. Callers check lengths first; reads
/// past the end yield zeros rather than trapping.
struct ATTByteReader {
    private var bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
    var remaining: Int { bytes.count }

    mutating func u8() -> UInt8 {
        guard let b = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return b
    }

    mutating func u16() -> UInt16 {
        let lo = UInt16(u8())
        return lo | UInt16(u8()) << 8
    }

    mutating func handle() -> AttributeHandle { AttributeHandle(u16()) }

    mutating func take(_ count: Int) -> [UInt8] {
        let k = max(0, min(count, bytes.count))
        let out = Array(bytes.prefix(k))
        bytes = bytes.dropFirst(k)
        return out
    }

    mutating func rest() -> [UInt8] { take(bytes.count) }
}
