import Crypto
import GattCore

/// Our P-256 key pair for LE Secure Connections (Core Spec Vol 3 Part H §2.3.5.6.1).
public struct SMPKeyPair: Sendable {
    let privateKey: P256.KeyAgreement.PrivateKey
    /// Our public key as sent in Pairing Public Key.
    public let publicKey: SMPPublicKey

    /// A fresh key pair from the system's secure random source.
    public init() { self.init(privateKey: P256.KeyAgreement.PrivateKey()) }

    /// From a 32-octet private key, most significant octet first (as the
    /// specification prints sample keys); `nil` if it is not a valid scalar.
    public init?(privateKeyMSBFirst bytes: [UInt8]) {
        guard bytes.count == 32, let k = try? P256.KeyAgreement.PrivateKey(rawRepresentation: bytes) else { return nil }
        self.init(privateKey: k)
    }

    init(privateKey: P256.KeyAgreement.PrivateKey) {
        self.privateKey = privateKey
        let raw = Array(privateKey.publicKey.rawRepresentation)
        self.publicKey = SMPPublicKey(x: raw[0..<32].reversed(), y: raw[32..<64].reversed(), key: privateKey.publicKey)
    }

    /// The DHKey (§2.3.5.6.1): the X coordinate of our private key times `peer`,
    /// 32 octets little-endian as f5 takes it. `nil` if the agreement fails.
    public func dhKey(with peer: SMPPublicKey) -> [UInt8]? {
        guard let secret = try? privateKey.sharedSecretFromKeyAgreement(with: peer.key) else { return nil }
        return secret.withUnsafeBytes { Array($0).reversed() }
    }

    /// The debug key pair of §2.3.5.6.1, which lets air sniffers decrypt the link: its public
    /// key recognises a peer that pairs with it (`SMPPublicKey.isDebugKey`, refused unless
    /// `SecurityManagerConfiguration.allowDebugKeys` is set); gattd never pairs with it itself.
    public static let debug: SMPKeyPair = {
        let d: [UInt8] = [
            0x3F, 0x49, 0xF6, 0xD4, 0xA3, 0xC5, 0x5F, 0x38, 0x74, 0xC9, 0xB3, 0xE3, 0xD2, 0x10, 0x3F, 0x50,
            0x4A, 0xFF, 0x60, 0x7B, 0xEB, 0x40, 0xB7, 0x99, 0x58, 0x99, 0xB8, 0xA6, 0xCD, 0x3C, 0x1A, 0xBD,
        ]
        // A valid constant scalar.
        return SMPKeyPair(privateKeyMSBFirst: d)!
    }()
}
