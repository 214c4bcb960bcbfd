import GattCore

/// How a `Bond` (the daemon's bond store) maps onto the kernel's mgmt key records, both ways.
/// Field by field, a bond made by the kernel's SMP:
///
/// | Bond | from mgmt | reference |
/// | --- | --- | --- |
/// | `address`, `addressType` | New LTK Address / Address_Type (1 LE public → `.public`, 2 LE random → `.random`) | mgmt-api.txt New Long Term Key: "the identity of a device" |
/// | `longTermKey` | New LTK Value, octets past Encryption Size zeroed | Core Spec Vol 3 Part H §2.3.4 (key size); kernel `hci_le_ltk_request_evt` |
/// | `ediv`, `rand` | New LTK Enc. Diversifier / Random Number (0 with P-256 keys) | Core Spec Vol 4 Part E §7.7.65.5 (EDIV = Rand = 0 for Secure Connections) |
/// | `keySize` | New LTK Encryption Size | mgmt-api.txt New Long Term Key |
/// | `authenticated` | Key_Type 0x01 or 0x03 | mgmt-api.txt New Long Term Key, Key_Type |
/// | `secureConnections` | Key_Type 0x02, 0x03, 0x04 (from P-256) | mgmt-api.txt New Long Term Key, Key_Type |
/// | `peerIRK` | New IRK Value (Address = the identity) | mgmt-api.txt New Identity Resolving Key |
/// | `peerCSRK` / `localCSRK` | New CSRK Value, Type 0x01/0x03 (remote) / 0x00/0x02 (local) | mgmt-api.txt New Signature Resolving Key |
/// | `localIdentity` | none: the kernel distributes an IRK only with mgmt privacy on, which gattd leaves off | mgmt-api.txt Set Privacy |
///
/// mgmt's Central flag: a legacy pairing yields up to two LTKs, the one the central
/// distributed (Central = 1: the kernel uses it only when *it* is the central) and the one we,
/// the peripheral, distributed (Central = 0: what a reconnecting central encrypts with, our
/// `longTermKey`). A P-256 key is one key for both roles (Central = 0). Loading writes
/// Central = 0 always.
enum KernelBondMapping {
    /// mgmt's LE address type for a bond's HCI address type (public and public identity →
    /// LE public; random and random identity → LE random).
    static func peer(of bond: Bond) -> KernelBDAddress {
        KernelBDAddress(bond.address, type: bond.addressType.rawValue & 1 == 0 ? .lePublic : .leRandom)
    }

    /// The HCI address type of an mgmt LE address type.
    static func addressType(_ type: KernelBDAddress.AddressType) -> BluetoothAddressType { type == .leRandom ? .random : .public }

    /// The key the kernel answers a reconnecting central's LE Long Term Key Request with;
    /// nil when the bond has none (a legacy pairing in which we distributed no LTK).
    static func longTermKey(for bond: Bond) -> KernelLongTermKey? {
        guard let key = bond.longTermKey else { return nil }
        let type: KernelLongTermKey.KeyType =
            bond.secureConnections
            ? (bond.authenticated ? .authenticatedP256 : .unauthenticatedP256)
            : (bond.authenticated ? .authenticatedLegacy : .unauthenticatedLegacy)
        return KernelLongTermKey(
            peer: peer(of: bond), type: type, central: false, encryptionSize: UInt8(clamping: bond.keySize),
            ediv: bond.secureConnections ? 0 : bond.ediv, rand: bond.secureConnections ? 0 : bond.rand, value: MgmtBytes.sixteen(key))
    }

    static func identityResolvingKey(for bond: Bond) -> KernelIdentityResolvingKey? {
        guard let irk = bond.peerIRK, irk.count == 16 else { return nil }
        return KernelIdentityResolvingKey(peer: peer(of: bond), value: irk)
    }

    /// The keys of `bonds` for Load Long Term Keys and Load Identity Resolving Keys. The
    /// kernel refuses the whole command for one address that is not an identity (an RPA
    /// the central never resolved): such bonds are left out and named in `skipped`.
    static func keys(for bonds: [Bond]) -> KernelKeySet {
        var set = KernelKeySet()
        for bond in bonds {
            guard peer(of: bond).isIdentity else {
                set.skipped.append(bond.address)
                continue
            }
            if let ltk = longTermKey(for: bond) { set.longTermKeys.append(ltk) }
            if let irk = identityResolvingKey(for: bond) { set.identityResolvingKeys.append(irk) }
        }
        return set
    }

    /// A bond from the keys one pairing produced (see the table above).
    static func bond(
        peer: KernelBDAddress, key: KernelLongTermKey, hasPeripheralKey: Bool, irk: [UInt8]?, peerCSRK: [UInt8]?, localCSRK: [UInt8]?
    ) -> Bond {
        let sc = key.type == .unauthenticatedP256 || key.type == .authenticatedP256 || key.type == .debugP256
        let size = Int(min(16, max(7, key.encryptionSize)))
        var value = MgmtBytes.sixteen(key.value)
        for i in size..<16 { value[i] = 0 }
        return Bond(
            address: peer.address, addressType: addressType(peer.type), longTermKey: hasPeripheralKey ? value : nil,
            ediv: hasPeripheralKey && !sc ? key.ediv : 0, rand: hasPeripheralKey && !sc ? key.rand : 0, keySize: size,
            authenticated: key.type == .authenticatedLegacy || key.type == .authenticatedP256, secureConnections: sc, peerIRK: irk,
            peerCSRK: peerCSRK, localCSRK: localCSRK)
    }
}
