import GattCore

// The key records of the kernel's management interface (BlueZ doc/mgmt-api.txt, since 5.66
// doc/mgmt-protocol.rst; structs in lib/bluetooth/mgmt.h) and the commands that carry them.
// All multi-octet fields are little-endian; an address is 6 octets (least significant first)
// and an address type (mgmt_addr_info: 0 BR/EDR, 1 LE public, 2 LE random).

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

/// An Identity Resolving Key (`struct mgmt_irk_info`, 23 octets): New IRK (0x0018), Load IRKs (0x0030).
public struct KernelIdentityResolvingKey: Sendable, Hashable {
    public static let size = 23
    /// The identity address (public or static random).
    public var peer: KernelBDAddress
    /// 16 octets, little-endian.
    public var value: [UInt8]

    public init(peer: KernelBDAddress, value: [UInt8]) {
        self.peer = peer
        self.value = value
    }

    init?(_ b: ArraySlice<UInt8>) {
        guard b.count >= Self.size, let peer = KernelBDAddress(mgmt: b) else { return nil }
        self.init(peer: peer, value: Array(b[(b.startIndex + 7)..<(b.startIndex + 23)]))
    }

    var encoded: [UInt8] { peer.mgmtBytes + MgmtBytes.sixteen(value) }
}

/// A Connection Signature Resolving Key (`struct mgmt_csrk_info`, 24 octets): New CSRK (0x0019).
public struct KernelSignatureResolvingKey: Sendable, Hashable {
    public var peer: KernelBDAddress
    /// mgmt's Type: 0x00/0x02 local (we sign with it), 0x01/0x03 remote (the central's);
    /// 0x02/0x03 authenticated.
    public var type: UInt8
    public var value: [UInt8]
    /// The central's key (it signs its Signed Writes with it), not ours.
    public var isRemote: Bool { type & 0x01 != 0 }

    init?(_ b: ArraySlice<UInt8>) {
        guard b.count >= 24, let peer = KernelBDAddress(mgmt: b), b[b.startIndex + 7] <= 0x03 else { return nil }
        self.peer = peer
        self.type = b[b.startIndex + 7]
        self.value = Array(b[(b.startIndex + 8)..<(b.startIndex + 24)])
    }
}

/// LE connection parameters for one device (`struct mgmt_conn_param`, 15 octets): New
/// Connection Parameter (0x001C), Load Connection Parameters (0x0035). Units as in HCI.
public struct KernelConnectionParameters: Sendable, Hashable {
    public static let size = 15
    public var peer: KernelBDAddress
    public var parameters: LEConnectionParameters

    public init(peer: KernelBDAddress, parameters: LEConnectionParameters) {
        self.peer = peer
        self.parameters = parameters
    }

    init?(_ b: ArraySlice<UInt8>) {
        guard b.count >= Self.size, let peer = KernelBDAddress(mgmt: b) else { return nil }
        let s = b.startIndex
        let v = (0..<4).map { UInt16(MgmtBytes.le(b, at: s + 7 + 2 * $0, count: 2)) }
        self.init(peer: peer, parameters: LEConnectionParameters(intervalMin: v[0], intervalMax: v[1], latency: v[2], supervisionTimeout: v[3]))
    }

    var encoded: [UInt8] {
        let p = parameters
        return peer.mgmtBytes + [p.intervalMin, p.intervalMax, p.latency, p.supervisionTimeout].flatMap { MgmtBytes.le(UInt64($0), count: 2) }
    }
}

/// The parameters of the mgmt commands that carry keys and pairing answers.
enum KernelKeyCommands {
    /// Load Long Term Keys (0x0013): Key_Count (2) then the keys. Replaces every LTK the kernel
    /// holds for the adapter.
    static func loadLongTermKeys(_ keys: [KernelLongTermKey]) -> [UInt8] {
        MgmtBytes.le(UInt64(keys.count), count: 2) + keys.flatMap(\.encoded)
    }

    /// Load Identity Resolving Keys (0x0030): Key_Count (2) then the keys. Replaces the IRK list
    /// and tells the kernel that user space stores IRKs (it then asks centrals for theirs).
    static func loadIdentityResolvingKeys(_ keys: [KernelIdentityResolvingKey]) -> [UInt8] {
        MgmtBytes.le(UInt64(keys.count), count: 2) + keys.flatMap(\.encoded)
    }

    /// Load Connection Parameters (0x0035): Param_Count (2) then the entries.
    static func loadConnectionParameters(_ entries: [KernelConnectionParameters]) -> [UInt8] {
        MgmtBytes.le(UInt64(entries.count), count: 2) + entries.flatMap(\.encoded)
    }

    /// Unpair Device (0x001B): Address, Address_Type, Disconnect (1: drop the link too).
    static func unpairDevice(_ peer: KernelBDAddress, disconnect: Bool) -> [UInt8] {
        peer.mgmtBytes + [disconnect ? 1 : 0]
    }

    /// User Confirmation Reply (0x001C) and Negative Reply (0x001D), User Passkey Negative
    /// Reply (0x001F): the address alone.
    static func address(_ peer: KernelBDAddress) -> [UInt8] { peer.mgmtBytes }

    /// User Passkey Reply (0x001E): Address, Address_Type, Passkey (4).
    static func userPasskeyReply(_ peer: KernelBDAddress, passkey: UInt32) -> [UInt8] {
        peer.mgmtBytes + MgmtBytes.le(UInt64(passkey), count: 4)
    }

    /// The largest number of `recordSize`-octet records one command can carry when a packet
    /// may be `packetLimit` octets long (6 header octets, a 2-octet count).
    static func capacity(recordSize: Int, packetLimit: Int) -> Int { max(0, (packetLimit - 6 - 2) / recordSize) }
}

extension KernelBDAddress {
    /// `struct mgmt_addr_info`: address (6, little-endian) then the kernel's address type.
    var mgmtBytes: [UInt8] { address.littleEndianBytes + [type.rawValue] }

    /// Parses the 7 octets of `mgmt_addr_info` at the start of `b`; nil for an unknown type.
    init?(mgmt b: ArraySlice<UInt8>) {
        guard b.count >= 7, let type = AddressType(rawValue: b[b.startIndex + 6]),
            let address = BluetoothAddress(littleEndian: b[b.startIndex..<(b.startIndex + 6)])
        else { return nil }
        self.init(address, type: type)
    }

    /// Whether mgmt accepts this as an identity address in Load LTKs/IRKs: LE public, or LE
    /// random with the two most significant bits set (static; Core Spec Vol 6 Part B §1.3.2.1).
    var isIdentity: Bool {
        switch type {
        case .lePublic: true
        case .leRandom: address.bytes[0] & 0xC0 == 0xC0
        case .bredr: false
        }
    }
}

/// Little-endian helpers for mgmt packets.
enum MgmtBytes {
    static func le(_ b: ArraySlice<UInt8>, at offset: Int, count: Int) -> UInt64 {
        (0..<count).reduce(UInt64(0)) { v, i in v | UInt64(b[offset + i]) << (8 * UInt64(i)) }
    }

    static func le(_ v: UInt64, count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }

    /// Exactly 16 octets (a key shorter or longer than that is padded with zeros or cut).
    static func sixteen(_ key: [UInt8]) -> [UInt8] { Array((key + [UInt8](repeating: 0, count: 16)).prefix(16)) }
}
