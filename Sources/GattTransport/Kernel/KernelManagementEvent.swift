import GattCore

/// The mgmt events (BlueZ doc/mgmt-api.txt, "Management Events") the kernel transport acts on:
/// the keys a pairing produced and the questions the kernel's SMP asks user space.
/// A packet is Event Code (2), Controller Index (2), Parameter Length (2), parameters.
public enum KernelManagementEvent: Sendable, Equatable {
    /// New Long Term Key (0x000A): Store_Hint (1), then `mgmt_ltk_info`. Ends a pairing.
    case newLongTermKey(KernelLongTermKey, store: Bool)
    /// New Identity Resolving Key (0x0018): Store_Hint (1), Random_Address (6: the RPA the
    /// central used, or 00:00:00:00:00:00), then `mgmt_irk_info` (the identity).
    case newIdentityResolvingKey(KernelIdentityResolvingKey, resolvablePrivateAddress: BluetoothAddress?, store: Bool)
    /// New Signature Resolving Key (0x0019): Store_Hint (1), then `mgmt_csrk_info`.
    case newSignatureResolvingKey(KernelSignatureResolvingKey, store: Bool)
    /// New Connection Parameter (0x001C): Store_Hint (1), then `mgmt_conn_param`. The kernel
    /// sends it only when it is the central and accepted a peripheral's parameters.
    case newConnectionParameter(KernelConnectionParameters, store: Bool)
    /// User Confirmation Request (0x000F): Address (7), Confirm_Hint (1: 1 = a plain yes/no,
    /// i.e. Just Works; 0 = compare `value`), Value (4).
    case userConfirmationRequest(KernelBDAddress, justWorks: Bool, value: UInt32)
    /// User Passkey Request (0x0010): Address (7). Answer with the passkey the central shows.
    case userPasskeyRequest(KernelBDAddress)
    /// Passkey Notify (0x0017): Address (7), Passkey (4), Entered (1: keypresses so far).
    case passkeyNotify(KernelBDAddress, passkey: UInt32, entered: UInt8)
    /// Authentication Failed (0x0011): Address (7), Status (1, an mgmt status).
    case authenticationFailed(KernelBDAddress, status: UInt8)

    public enum Code {
        public static let newLongTermKey: UInt16 = 0x000A
        public static let userConfirmationRequest: UInt16 = 0x000F
        public static let userPasskeyRequest: UInt16 = 0x0010
        public static let authenticationFailed: UInt16 = 0x0011
        public static let passkeyNotify: UInt16 = 0x0017
        public static let newIdentityResolvingKey: UInt16 = 0x0018
        public static let newSignatureResolvingKey: UInt16 = 0x0019
        public static let newConnectionParameter: UInt16 = 0x001C
    }

    /// Parses one packet read from the mgmt socket; nil for another adapter, another event,
    /// or parameters shorter than the event's (longer ones are accepted: fields may be added).
    public init?(packet: [UInt8], index: Int) {
        guard packet.count >= 6 else { return nil }
        let p = packet[...]
        let code = UInt16(MgmtBytes.le(p, at: 0, count: 2))
        let length = Int(MgmtBytes.le(p, at: 4, count: 2))
        guard Int(MgmtBytes.le(p, at: 2, count: 2)) == index, packet.count >= 6 + length else { return nil }
        let b = packet[6..<(6 + length)]
        let s = b.startIndex
        switch code {
        case Code.newLongTermKey:
            guard length >= 1 + KernelLongTermKey.size, let key = KernelLongTermKey(b.dropFirst()) else { return nil }
            self = .newLongTermKey(key, store: b[s] != 0)
        case Code.newIdentityResolvingKey:
            guard length >= 7 + KernelIdentityResolvingKey.size, let key = KernelIdentityResolvingKey(b.dropFirst(7)),
                let rpa = BluetoothAddress(littleEndian: b[(s + 1)..<(s + 7)])
            else { return nil }
            self = .newIdentityResolvingKey(key, resolvablePrivateAddress: rpa == .zero ? nil : rpa, store: b[s] != 0)
        case Code.newSignatureResolvingKey:
            guard length >= 25, let key = KernelSignatureResolvingKey(b.dropFirst()) else { return nil }
            self = .newSignatureResolvingKey(key, store: b[s] != 0)
        case Code.newConnectionParameter:
            guard length >= 1 + KernelConnectionParameters.size, let entry = KernelConnectionParameters(b.dropFirst()) else { return nil }
            self = .newConnectionParameter(entry, store: b[s] != 0)
        case Code.userConfirmationRequest:
            guard length >= 12, let peer = KernelBDAddress(mgmt: b) else { return nil }
            self = .userConfirmationRequest(peer, justWorks: b[s + 7] != 0, value: UInt32(MgmtBytes.le(b, at: s + 8, count: 4)))
        case Code.userPasskeyRequest:
            guard length >= 7, let peer = KernelBDAddress(mgmt: b) else { return nil }
            self = .userPasskeyRequest(peer)
        case Code.passkeyNotify:
            guard length >= 12, let peer = KernelBDAddress(mgmt: b) else { return nil }
            self = .passkeyNotify(peer, passkey: UInt32(MgmtBytes.le(b, at: s + 7, count: 4)), entered: b[s + 11])
        case Code.authenticationFailed:
            guard length >= 8, let peer = KernelBDAddress(mgmt: b) else { return nil }
            self = .authenticationFailed(peer, status: b[s + 7])
        default:
            return nil
        }
    }
}
