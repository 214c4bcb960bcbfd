import GattCore

/// An LE Long Term Key as mgmt carries it (`struct mgmt_ltk_info`, 36 octets): in the New Long
/// Term Key event (0x000A) and the Load Long Term Keys command (0x0013).
public struct KernelLongTermKey: Sendable, Hashable {
    /// mgmt-api.txt "Key_Type" of New Long Term Key.
    public enum KeyType: UInt8, Sendable, Hashable {
        case unauthenticatedLegacy = 0x00
        case authenticatedLegacy = 0x01
        case unauthenticatedP256 = 0x02
        case authenticatedP256 = 0x03
        /// Secure Connections with the specification's debug key: the kernel never loads it.
        case debugP256 = 0x04
    }

    public static let size = 36

    public var peer: KernelBDAddress
    public var type: KeyType
    /// mgmt's "Central" (formerly "Master") flag: 1 = the key the *central* distributed (the
    /// kernel uses it when it is the central, `SMP_LTK`); 0 = the key the peripheral
    /// distributed or an LE Secure Connections key (`SMP_LTK_RESPONDER` / `SMP_LTK_P256`).
    public var central: Bool
    public var encryptionSize: UInt8
    public var ediv: UInt16
    public var rand: UInt64
    /// 16 octets, little-endian.
    public var value: [UInt8]

    public init(peer: KernelBDAddress, type: KeyType, central: Bool, encryptionSize: UInt8, ediv: UInt16, rand: UInt64, value: [UInt8]) {
        self.peer = peer
        self.type = type
        self.central = central
        self.encryptionSize = encryptionSize
        self.ediv = ediv
        self.rand = rand
        self.value = value
    }

    /// Parses 36 octets; nil for an unknown address or key type, or a short record.
    init?(_ b: ArraySlice<UInt8>) {
        guard b.count >= Self.size, let peer = KernelBDAddress(mgmt: b), let type = KeyType(rawValue: b[b.startIndex + 7]) else { return nil }
        let s = b.startIndex
        self.init(
            peer: peer, type: type, central: b[s + 8] != 0, encryptionSize: b[s + 9], ediv: UInt16(MgmtBytes.le(b, at: s + 10, count: 2)),
            rand: MgmtBytes.le(b, at: s + 12, count: 8), value: Array(b[(s + 20)..<(s + 36)]))
    }

    var encoded: [UInt8] {
        peer.mgmtBytes + [type.rawValue, central ? 1 : 0, encryptionSize] + MgmtBytes.le(UInt64(ediv), count: 2) + MgmtBytes.le(rand, count: 8)
            + MgmtBytes.sixteen(value)
    }
}
