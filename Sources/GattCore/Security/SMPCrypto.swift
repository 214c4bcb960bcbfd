import Crypto
import CryptoExtras

/// The LE Security Manager's cryptographic toolbox (Core Spec Vol 3 Part H §2.2).
///
/// **Byte order.** The specification defines every function on MSB-first
/// integers, while SMP PDUs carry them least significant octet first. Every
/// parameter and result here is in the **little-endian air order** of the PDUs
/// (and of HCI's LE Long Term Key Request Reply): a confirm value, a nonce, a
/// key or a public-key coordinate is passed exactly as it travels. The functions
/// reverse internally to feed AES and AES-CMAC in the specification's order.
/// Addresses (`a1`, `a2` of f5/f6) are 7 octets: the 6 little-endian address
/// octets followed by the address type (0x00 public, 0x01 random).
public enum SMPCrypto {
    /// Security function e (§2.2.1): AES-128 of one block.
    /// - Parameters: key, plaintext: 16 octets each, little-endian.
    /// - Returns: the 16-octet ciphertext, little-endian; all zeros for wrong sizes.
    public static func e(key: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        guard key.count == 16, plaintext.count == 16 else { return [UInt8](repeating: 0, count: 16) }
        return Array(aes(key: key.reversed(), block: plaintext.reversed()).reversed())
    }

    /// Random address hash function ah (§2.2.2): 24 bits of e(k, padding ‖ r).
    /// - Parameters: irk: 16 octets; prand: 3 octets (little-endian).
    /// - Returns: the 3-octet hash, little-endian.
    public static func ah(irk: [UInt8], prand: [UInt8]) -> [UInt8] {
        guard prand.count == 3 else { return [0, 0, 0] }
        return Array(e(key: irk, plaintext: prand + [UInt8](repeating: 0, count: 13)).prefix(3))
    }

    /// Confirm value generation function c1 for LE legacy pairing (§2.2.3).
    /// - Parameters:
    ///   - k: TK, 16 octets. r: Mrand or Srand, 16 octets.
    ///   - preq, pres: the Pairing Request and Response PDUs as sent (7 octets, code first).
    ///   - iat, rat: initiator/responder address types (0 public, 1 random).
    ///   - ia, ra: initiator/responder addresses.
    public static func c1(
        k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8],
        iat: UInt8, ia: BluetoothAddress, rat: UInt8, ra: BluetoothAddress
    ) -> [UInt8] {
        guard preq.count == 7, pres.count == 7, r.count == 16 else { return [UInt8](repeating: 0, count: 16) }
        // p1 = pres ‖ preq ‖ rat' ‖ iat' (MSB first), so little-endian iat' comes first.
        let p1 = [iat & 1, rat & 1] + preq + pres
        // p2 = padding ‖ ia ‖ ra (MSB first).
        let p2 = ra.littleEndianBytes + ia.littleEndianBytes + [0, 0, 0, 0]
        return e(key: k, plaintext: xor(e(key: k, plaintext: xor(r, p1)), p2))
    }

    /// Key generation function s1 for LE legacy pairing (§2.2.4): STK = s1(TK, Srand, Mrand).
    /// r' = the least significant 64 bits of r1 ‖ those of r2 (MSB first).
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) -> [UInt8] {
        guard r1.count == 16, r2.count == 16 else { return [UInt8](repeating: 0, count: 16) }
        return e(key: k, plaintext: Array(r2.prefix(8) + r1.prefix(8)))
    }

    /// LE Secure Connections confirm value generation function f4 (§2.2.6):
    /// AES-CMAC_X(U ‖ V ‖ Z). U, V: 32 octets; X: 16 octets; Z: one octet.
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) -> [UInt8] {
        cmacLE(key: x, messageLE: [z] + v + u)
    }

    /// LE Secure Connections key generation function f5 (§2.2.7).
    /// - Parameters: w: the DHKey (32 octets); n1, n2: nonces; a1, a2: 7-octet addresses.
    /// - Returns: (MacKey, LTK), 16 octets each, little-endian.
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]) -> (macKey: [UInt8], ltk: [UInt8]) {
        // SALT = 0x6C888391AAF5A53860370BDB5A6083BE (MSB first).
        let salt: [UInt8] = [0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE]
        let t = AESCMAC.mac(key: salt, message: w.reversed())
        // Counter ‖ keyID "btle" ‖ N1 ‖ N2 ‖ A1 ‖ A2 ‖ Length 256, MSB first.
        func derive(_ counter: UInt8) -> [UInt8] {
            let m: [UInt8] = [counter, 0x62, 0x74, 0x6C, 0x65] + n1.reversed() + n2.reversed() + a1.reversed() + a2.reversed() + [0x01, 0x00]
            return Array(AESCMAC.mac(key: t, message: m).reversed())
        }
        return (derive(0), derive(1))
    }

    /// LE Secure Connections check value generation function f6 (§2.2.8):
    /// AES-CMAC_W(N1 ‖ N2 ‖ R ‖ IOcap ‖ A1 ‖ A2).
    /// - Parameter ioCap: 3 octets little-endian: IO capability, OOB flag, AuthReq.
    public static func f6(w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8], a1: [UInt8], a2: [UInt8]) -> [UInt8] {
        cmacLE(key: w, messageLE: a2 + a1 + ioCap + r + n2 + n1)
    }

    /// LE Secure Connections numeric comparison value function g2 (§2.2.9):
    /// the least significant 32 bits of AES-CMAC_X(U ‖ V ‖ Y). Display it modulo 10⁶.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) -> UInt32 {
        let mac = cmacLE(key: x, messageLE: y + v + u)
        return UInt32(mac[0]) | UInt32(mac[1]) << 8 | UInt32(mac[2]) << 16 | UInt32(mac[3]) << 24
    }

    /// Link key conversion function h6 (§2.2.10): AES-CMAC_W(keyID).
    /// - Parameter keyID: the 4-octet key ID as the specification writes it (e.g. 0x6C656272 "lebr").
    public static func h6(w: [UInt8], keyID: UInt32) -> [UInt8] {
        cmacLE(key: w, messageLE: [UInt8(truncatingIfNeeded: keyID), UInt8(truncatingIfNeeded: keyID >> 8),
                                   UInt8(truncatingIfNeeded: keyID >> 16), UInt8(truncatingIfNeeded: keyID >> 24)])
    }

    /// Link key conversion function h7 (§2.2.11): AES-CMAC_SALT(W).
    public static func h7(salt: [UInt8], w: [UInt8]) -> [UInt8] {
        cmacLE(key: salt, messageLE: w)
    }

    /// AES-CMAC with key and message given little-endian; the MAC returned little-endian.
    static func cmacLE(key: [UInt8], messageLE: [UInt8]) -> [UInt8] {
        guard key.count == 16 else { return [UInt8](repeating: 0, count: 16) }
        return Array(AESCMAC.mac(key: key.reversed(), message: messageLE.reversed()).reversed())
    }

    /// One AES-128 block, key and block in AES's own (MSB-first) order.
    static func aes(key: [UInt8], block: [UInt8]) -> [UInt8] {
        var out = block
        // A 16-octet key and a 16-octet block cannot fail.
        try! AES.permute(&out, key: SymmetricKey(data: key))
        return out
    }

    static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { zip(a, b).map { $0 ^ $1 } }
}
