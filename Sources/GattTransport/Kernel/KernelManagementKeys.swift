import GattCore

// The key records of the kernel's management interface (BlueZ doc/mgmt-api.txt, since 5.66
// doc/mgmt-protocol.rst; structs in lib/bluetooth/mgmt.h) and the commands that carry them.
// All multi-octet fields are little-endian; an address is 6 octets (least significant first)
// and an address type (mgmt_addr_info: 0 BR/EDR, 1 LE public, 2 LE random).

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
