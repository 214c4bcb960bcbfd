import GattCore

/// A typed SMP command (Core Spec Vol 3 Part H §3.5 pairing methods, §3.6 key
/// distribution). Multi-octet values are kept little-endian, as carried.
public enum SMPCommand: Sendable, Hashable {
    case pairingRequest(SMPPairingFeatures)
    case pairingResponse(SMPPairingFeatures)
    /// Mconfirm/Sconfirm (legacy) or Ca/Cb (Secure Connections), 16 octets.
    case pairingConfirm([UInt8])
    /// Mrand/Srand or Na/Nb, 16 octets.
    case pairingRandom([UInt8])
    case pairingFailed(SMPPairingFailedReason)
    /// The LTK, 16 octets (legacy key distribution).
    case encryptionInformation(longTermKey: [UInt8])
    /// EDIV and Rand identifying the LTK just sent.
    case centralIdentification(ediv: UInt16, rand: UInt64)
    /// The IRK, 16 octets.
    case identityInformation(irk: [UInt8])
    /// The public or static random identity address.
    case identityAddressInformation(type: BluetoothAddressType, address: BluetoothAddress)
    /// The CSRK, 16 octets.
    case signingInformation(csrk: [UInt8])
    case securityRequest(SMPAuthenticationRequirements)
    /// X ‖ Y, 64 octets, not yet validated (see `SMPPublicKey(air:)`).
    case pairingPublicKey([UInt8])
    /// Ea/Eb, 16 octets.
    case pairingDHKeyCheck([UInt8])
    /// Passkey entry started/digit entered/erased/cleared/completed (0–4).
    case keypressNotification(UInt8)

    /// The command's code (§3.3).
    public var code: SMPCode {
        switch self {
        case .pairingRequest: .pairingRequest
        case .pairingResponse: .pairingResponse
        case .pairingConfirm: .pairingConfirm
        case .pairingRandom: .pairingRandom
        case .pairingFailed: .pairingFailed
        case .encryptionInformation: .encryptionInformation
        case .centralIdentification: .centralIdentification
        case .identityInformation: .identityInformation
        case .identityAddressInformation: .identityAddressInformation
        case .signingInformation: .signingInformation
        case .securityRequest: .securityRequest
        case .pairingPublicKey: .pairingPublicKey
        case .pairingDHKeyCheck: .pairingDHKeyCheck
        case .keypressNotification: .pairingKeypressNotification
        }
    }

    /// The data length each code requires (§3.5, §3.6), the code octet not counted.
    static func dataLength(of code: SMPCode) -> Int? {
        switch code {
        case .pairingRequest, .pairingResponse: 6
        case .pairingConfirm, .pairingRandom, .encryptionInformation, .identityInformation,
            .signingInformation, .pairingDHKeyCheck: 16
        case .pairingFailed, .securityRequest, .pairingKeypressNotification: 1
        case .centralIdentification: 10
        case .identityAddressInformation: 7
        case .pairingPublicKey: 64
        default: nil
        }
    }

    /// Decodes an SMP PDU (the payload of an L2CAP frame on CID 0x0006). Total:
    /// every malformed input is a typed error.
    public init(decoding bytes: [UInt8]) throws(SMPDecodingError) {
        guard let first = bytes.first else { throw .empty }
        let code = SMPCode(rawValue: first)
        guard let length = Self.dataLength(of: code) else { throw .unknownCode(first) }
        let d = Array(bytes.dropFirst())
        guard d.count == length else { throw .invalidLength(code: code, expected: length, actual: d.count) }
        var r = CodecByteReader(d)
        switch code {
        case .pairingRequest: self = .pairingRequest(try SMPPairingFeatures(decoding: d, code: code))
        case .pairingResponse: self = .pairingResponse(try SMPPairingFeatures(decoding: d, code: code))
        case .pairingConfirm: self = .pairingConfirm(d)
        case .pairingRandom: self = .pairingRandom(d)
        case .pairingFailed: self = .pairingFailed(SMPPairingFailedReason(rawValue: d[0]))
        case .encryptionInformation: self = .encryptionInformation(longTermKey: d)
        case .centralIdentification: self = .centralIdentification(ediv: r.u16(), rand: r.u64())
        case .identityInformation: self = .identityInformation(irk: d)
        case .identityAddressInformation:
            guard d[0] <= 1 else { throw .invalidValue(code: code, field: "AddrType") }
            self = .identityAddressInformation(type: BluetoothAddressType(rawValue: d[0]), address: r.addressAfterType())
        case .signingInformation: self = .signingInformation(csrk: d)
        case .securityRequest: self = .securityRequest(SMPAuthenticationRequirements(rawValue: d[0]))
        case .pairingPublicKey: self = .pairingPublicKey(d)
        case .pairingDHKeyCheck: self = .pairingDHKeyCheck(d)
        default: self = .keypressNotification(d[0])
        }
    }

    /// The PDU octets: code, then data. Fixed-size fields are padded or cut to
    /// their length so the result always decodes to the same code.
    public func encoded() -> [UInt8] {
        var w = CodecByteWriter(capacity: 65)
        w.u8(code.rawValue)
        func fixed(_ v: [UInt8], _ n: Int) { w.append(v.prefix(n) + [UInt8](repeating: 0, count: max(0, n - v.count))) }
        switch self {
        case .pairingRequest(let f), .pairingResponse(let f): w.append(f.encoded)
        case .pairingConfirm(let v), .pairingRandom(let v), .encryptionInformation(let v), .identityInformation(let v),
            .signingInformation(let v), .pairingDHKeyCheck(let v):
            fixed(v, 16)
        case .pairingFailed(let reason): w.u8(reason.rawValue)
        case .centralIdentification(let ediv, let rand):
            w.u16(ediv)
            w.u64(rand)
        case .identityAddressInformation(let type, let address):
            w.u8(type.rawValue)
            w.address(address)
        case .securityRequest(let a): w.u8(a.rawValue)
        case .pairingPublicKey(let v): fixed(v, 64)
        case .keypressNotification(let t): w.u8(t)
        }
        return w.bytes
    }
}

extension CodecByteReader {
    /// The address of Identity Address Information, after its type octet.
    fileprivate mutating func addressAfterType() -> BluetoothAddress {
        _ = u8()
        return address()
    }
}
