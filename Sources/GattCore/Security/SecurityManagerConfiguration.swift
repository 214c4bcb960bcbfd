/// What the Security Manager offers and accepts when pairing (Core Spec Vol 3
/// Part H §2.3): our IO capability, bonding, Secure Connections Only mode, the
/// minimum key size, and the keys we distribute.
public struct SecurityManagerConfiguration: Sendable, Equatable {
    /// What the user can see and enter (§2.3.2).
    public var ioCapability: SMPIOCapability
    /// Whether we bond (distribute and keep keys) when the central asks to.
    public var bondable: Bool
    /// Secure Connections Only mode (LE security mode 1 level 4): refuse legacy pairing.
    public var secureConnectionsOnly: Bool
    /// The smallest negotiated encryption key size accepted, 7–16 octets.
    public var minimumKeySize: Int
    /// Accept a central that uses the specification's debug public key.
    public var allowDebugKeys: Bool
    /// Require MITM protection: our AuthReq sets MITM and Just Works is refused.
    public var requireMITM: Bool
    /// Ask the user (event `pairingRequest`) before answering a Pairing Request.
    public var confirmPairing: Bool
    /// Our Identity Resolving Key (16 octets, little-endian) and identity address,
    /// distributed when bonding; `nil` distributes no identity.
    public var identity: SMPIdentity?
    /// Distribute a fresh CSRK when the central asks for our signing key.
    public var distributeSigningKey: Bool
    /// Ask every central to pair or encrypt as soon as it connects (a Security Request,
    /// §3.6.7) instead of waiting for it to meet an attribute that needs security.
    public var requestSecurityOnConnect = false

    /// The defaults are those of the `security` config object; `minimumKeySize` is clamped to 7–16.
    public init(
        ioCapability: SMPIOCapability = .noInputNoOutput, bondable: Bool = true, secureConnectionsOnly: Bool = false,
        minimumKeySize: Int = 16, allowDebugKeys: Bool = false, requireMITM: Bool = false, confirmPairing: Bool = false,
        identity: SMPIdentity? = nil, distributeSigningKey: Bool = false
    ) {
        self.ioCapability = ioCapability
        self.bondable = bondable
        self.secureConnectionsOnly = secureConnectionsOnly
        self.minimumKeySize = min(16, max(7, minimumKeySize))
        self.allowDebugKeys = allowDebugKeys
        self.requireMITM = requireMITM
        self.confirmPairing = confirmPairing
        self.identity = identity
        self.distributeSigningKey = distributeSigningKey
    }

    /// Whether our AuthReq sets MITM: when required, or when our IO capability
    /// can take part in an authenticated association model.
    package var offersMITM: Bool { requireMITM || ioCapability != .noInputNoOutput }

    /// The level a Security Request on connection asks for: authenticated when our IO
    /// capability can take part in an authenticated method, else encrypted; nil when off.
    public var securityOnConnect: SecurityLevel? {
        guard requestSecurityOnConnect else { return nil }
        return offersMITM ? .high : .medium
    }
}

/// An identity a device distributes (Core Spec Vol 3 Part H §3.6.4, §3.6.5):
/// IRK and identity address.
public struct SMPIdentity: Sendable, Hashable {
    /// Identity Resolving Key, 16 octets little-endian.
    public var irk: [UInt8]
    public var address: BluetoothAddress
    /// `.public` or `.random` (static).
    public var addressType: BluetoothAddressType

    /// From the IRK (little-endian), the address and its type.
    public init(irk: [UInt8], address: BluetoothAddress, addressType: BluetoothAddressType) {
        self.irk = irk
        self.address = address
        self.addressType = addressType
    }
}

/// One side of the link as f5/f6/c1 see it: address and type (0 public, 1 random).
public struct SMPDeviceAddress: Sendable, Hashable {
    public var address: BluetoothAddress
    public var type: BluetoothAddressType

    /// From the address used on the link and its type.
    public init(_ address: BluetoothAddress, type: BluetoothAddressType) {
        self.address = address
        self.type = type
    }

    /// The random bit only: identity types (0x02/0x03) fold onto public/random.
    package var typeBit: UInt8 { type.rawValue & 1 }

    /// The 56-bit A1/A2 of f5 and f6, little-endian: address then type octet.
    package var f5Bytes: [UInt8] { address.littleEndianBytes + [typeBit] }
}
