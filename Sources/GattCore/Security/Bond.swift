/// The keys kept for a bonded central (Core Spec Vol 3 Part H §2.4 key
/// distribution, §2.4.1 security databases).
public struct Bond: Sendable, Equatable {
    /// The central's identity address if it distributed one, else its connection address.
    public var address: BluetoothAddress
    public var addressType: BluetoothAddressType
    /// The key the central encrypts later connections with, 16 octets little-endian,
    /// already shortened to `keySize`: the Secure Connections LTK, or for legacy
    /// pairing the LTK we distributed (`nil` when the central did not ask for it).
    public var longTermKey: [UInt8]?
    /// EDIV and Rand of a legacy LTK (both 0 with Secure Connections).
    public var ediv: UInt16
    public var rand: UInt64
    /// Negotiated encryption key size in octets (7–16).
    public var keySize: Int
    /// Whether pairing had MITM protection (not Just Works).
    public var authenticated: Bool
    public var secureConnections: Bool
    /// The central's Identity Resolving Key, little-endian.
    public var peerIRK: [UInt8]?
    /// The central's Connection Signature Resolving Key, little-endian.
    public var peerCSRK: [UInt8]?
    /// What we distributed: our identity (IRK and address) and CSRK.
    public var localIdentity: SMPIdentity?
    public var localCSRK: [UInt8]?

    /// A bond from its parts; EDIV and Rand default to the 0 of Secure Connections.
    public init(
        address: BluetoothAddress, addressType: BluetoothAddressType, longTermKey: [UInt8]?, ediv: UInt16 = 0, rand: UInt64 = 0,
        keySize: Int, authenticated: Bool, secureConnections: Bool, peerIRK: [UInt8]? = nil, peerCSRK: [UInt8]? = nil,
        localIdentity: SMPIdentity? = nil, localCSRK: [UInt8]? = nil
    ) {
        self.address = address
        self.addressType = addressType
        self.longTermKey = longTermKey
        self.ediv = ediv
        self.rand = rand
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
        self.peerIRK = peerIRK
        self.peerCSRK = peerCSRK
        self.localIdentity = localIdentity
        self.localCSRK = localCSRK
    }

    /// Whether `address` is a resolvable private address (Vol 6 Part B §1.3.2.2:
    /// the two most significant bits 0b01) generated from this bond's IRK.
    public func resolves(_ address: BluetoothAddress) -> Bool {
        guard let irk = peerIRK, irk.count == 16, Self.isResolvablePrivateAddress(address) else { return false }
        let le = address.littleEndianBytes
        return SMPCrypto.ah(irk: irk, prand: Array(le[3..<6])) == Array(le[0..<3])
    }

    /// The two most significant bits of a resolvable private address are 0b01.
    public static func isResolvablePrivateAddress(_ address: BluetoothAddress) -> Bool {
        address.bytes[0] & 0xC0 == 0x40
    }
}

extension Collection where Element == Bond {
    /// The bond whose IRK resolves the resolvable private address `address`
    /// (ah(IRK, prand) == hash, §2.2.2), or `nil`.
    public func resolving(_ address: BluetoothAddress) -> Bond? {
        first { $0.resolves(address) }
    }

    /// The bond of the central at `address` (its identity address, or an RPA one
    /// of the bonds' IRKs resolves).
    public func bond(for address: BluetoothAddress) -> Bond? {
        first { $0.address == address } ?? resolving(address)
    }

    /// The key for an LE Long Term Key Request (Vol 4 Part E §7.7.65.5): with
    /// EDIV = 0 and Rand = 0 the Secure Connections LTK of the central at
    /// `address`; otherwise the legacy LTK we distributed with that EDIV and Rand.
    public func longTermKey(ediv: UInt16, rand: UInt64, address: BluetoothAddress) -> [UInt8]? {
        if ediv == 0 && rand == 0 {
            guard let b = bond(for: address), b.secureConnections else { return nil }
            return b.longTermKey
        }
        return first { !$0.secureConnections && $0.ediv == ediv && $0.rand == rand && $0.longTermKey != nil }?.longTermKey
    }
}
