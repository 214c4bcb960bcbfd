import GattCore

/// A raw SMP PDU (Core Spec Vol 3 Part H §3.3): the code and its data. The typed
/// codec is `SMPCommand`; this stays for hosts that refuse pairing altogether.
public struct SMPPDU: Sendable, Hashable {
    public var code: SMPCode
    public var data: [UInt8]

    public init(code: SMPCode, data: [UInt8]) {
        self.code = code
        self.data = data
    }

    /// Decodes the payload of an L2CAP frame on CID 0x0006; only an empty payload fails.
    public init(decoding bytes: [UInt8]) throws(L2CAPDecodingError) {
        guard let first = bytes.first else { throw .truncated(structure: "SMP PDU", needed: 1, actual: 0) }
        self.code = SMPCode(rawValue: first)
        self.data = Array(bytes.dropFirst())
    }

    public func encoded() -> [UInt8] { [code.rawValue] + data }

    /// Pairing Failed (0x05) with `reason`.
    public static func pairingFailed(_ reason: SMPPairingFailedReason) -> SMPPDU {
        SMPPDU(code: .pairingFailed, data: [reason.rawValue])
    }

    /// The answer of a peripheral that supports no pairing and never sends Security
    /// Request: a Pairing Request gets Pairing Failed "Pairing Not Supported"
    /// (`05 05`); everything else (including undecodable or reserved-code PDUs, which
    /// §3.3 says to ignore) gets no answer.
    public static func responseWithoutPairingSupport(to payload: [UInt8]) -> SMPPDU? {
        guard payload.first == SMPCode.pairingRequest.rawValue else { return nil }
        return .pairingFailed(.pairingNotSupported)
    }
}
