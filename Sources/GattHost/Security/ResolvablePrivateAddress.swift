import GattCore

/// Resolvable private addresses (Core Spec Vol 6 Part B §1.3.2.2): `hash ‖ prand`, where
/// prand is 22 random bits under the two most significant bits 0b01 and hash = ah(IRK, prand)
/// (Vol 3 Part H §2.2.2). A bonded central that has our IRK recognises every one of them.
public enum ResolvablePrivateAddress {
    /// A new address for `irk` (16 octets, little-endian).
    public static func make(irk: [UInt8], using random: inout some RandomNumberGenerator) -> BluetoothAddress {
        var prand: [UInt8]
        repeat {
            prand = (0..<3).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            prand[2] = prand[2] & 0x3F | 0x40
            // The random part must be neither all zeros nor all ones.
        } while (prand[0] == 0 && prand[1] == 0 && prand[2] == 0x40) || (prand[0] == 0xFF && prand[1] == 0xFF && prand[2] == 0x7F)
        let littleEndian = SMPCrypto.ah(irk: irk, prand: prand) + prand
        return BluetoothAddress(unchecked: littleEndian.reversed())
    }

    /// Whether `address` is a resolvable private address made with `irk`.
    public static func resolves(_ address: BluetoothAddress, irk: [UInt8]) -> Bool {
        guard irk.count == 16, address.bytes[0] & 0xC0 == 0x40 else { return false }
        let le = address.littleEndianBytes
        return SMPCrypto.ah(irk: irk, prand: Array(le[3..<6])) == Array(le[0..<3])
    }
}
