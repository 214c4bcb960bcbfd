import Crypto
import GattCore

/// A P-256 public key as LE Secure Connections exchanges it (Core Spec Vol 3 Part H §3.5.6):
/// X and Y, 32 octets each, little-endian. Only points on the curve can be built.
public struct SMPPublicKey: Sendable, Hashable {
    /// X coordinate, little-endian.
    public let x: [UInt8]
    /// Y coordinate, little-endian.
    public let y: [UInt8]
    let key: P256.KeyAgreement.PublicKey

    /// From the 64 octets of a Pairing Public Key PDU (X ‖ Y, each little-endian).
    /// `nil` if the length is wrong or the point is not on P-256 (the invalid-curve
    /// attack, CVE-2018-5383) — including the point at infinity (all zeros).
    public init?(air bytes: [UInt8]) {
        guard bytes.count == 64 else { return nil }
        let x = Array(bytes[0..<32]), y = Array(bytes[32..<64])
        guard let key = try? P256.KeyAgreement.PublicKey(rawRepresentation: x.reversed() + y.reversed()) else { return nil }
        self.init(x: x, y: y, key: key)
    }

    init(x: [UInt8], y: [UInt8], key: P256.KeyAgreement.PublicKey) {
        self.x = x
        self.y = y
        self.key = key
    }

    /// X ‖ Y, each little-endian, as carried by Pairing Public Key.
    public var air: [UInt8] { x + y }

    /// Whether this is the specification's debug public key (§2.3.5.6.1).
    public var isDebugKey: Bool { self == SMPKeyPair.debug.publicKey }

    public static func == (a: Self, b: Self) -> Bool { a.x == b.x && a.y == b.y }
    public func hash(into hasher: inout Hasher) { hasher.combine(x) }
}
