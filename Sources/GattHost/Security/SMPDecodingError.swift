import GattCore

/// Why an SMP PDU could not be decoded into an `SMPCommand`.
public enum SMPDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No octets at all.
    case empty
    /// A code reserved for future use.
    case unknownCode(UInt8)
    /// A known command with the wrong data length (the code octet not counted).
    case invalidLength(code: SMPCode, expected: Int, actual: Int)
    /// A field holds a reserved value.
    case invalidValue(code: SMPCode, field: String)

    /// The Pairing Failed reason a responder answers this with (§3.5.5):
    /// Command Not Supported for unknown codes, Invalid Parameters otherwise.
    public var pairingFailedReason: SMPPairingFailedReason {
        if case .unknownCode = self { return .commandNotSupported }
        return .invalidParameters
    }

    public var description: String {
        switch self {
        case .empty: "empty SMP PDU"
        case .unknownCode(let c): "reserved SMP code \(codecHex(c, digits: 2))"
        case .invalidLength(let code, let expected, let actual): "\(code): expected \(expected) data octets, got \(actual)"
        case .invalidValue(let code, let field): "\(code): reserved value in \(field)"
        }
    }
}
