import GattCore

// The Enhanced Credit Based signalling commands (Core Spec Vol 3 Part A §4.25–§4.28):
// connection of up to five channels at once and their reconfiguration.

/// Result of an L2CAP_CREDIT_BASED_RECONFIGURE_RSP (Core Spec Vol 3 Part A §4.28).
public struct CreditBasedReconfigureResult: RawRepresentable, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let successful = Self(rawValue: 0x0000)
    public static let mtuReductionNotAllowed = Self(rawValue: 0x0001)
    public static let mpsReductionNotAllowed = Self(rawValue: 0x0002)
    public static let invalidDestinationCID = Self(rawValue: 0x0003)
    public static let unacceptableParameters = Self(rawValue: 0x0004)
}

extension LESignallingCommand {
    /// The most channels one Credit Based Connection or Reconfigure Request names (§4.25).
    public static let maximumEnhancedChannels = 5
    /// The smallest MTU and MPS of a channel in Enhanced Credit Based mode (§4.25, §4.27).
    public static let minimumEnhancedMTU = 64

    /// Codes 0x17–0x1A: fixed fields, then a list of 16-bit CIDs (any count, even none: the
    /// host answers a count outside 1...5 with its result, not a Command Reject).
    static func enhancedCreditBased(code: UInt8, data: [UInt8]) throws(L2CAPDecodingError) -> LESignallingCommand {
        let (name, fixed): (String, Int) =
            switch code {
            case 0x17: ("L2CAP_CREDIT_BASED_CONNECTION_REQ", 8)
            case 0x18: ("L2CAP_CREDIT_BASED_CONNECTION_RSP", 8)
            case 0x19: ("L2CAP_CREDIT_BASED_RECONFIGURE_REQ", 4)
            default: ("L2CAP_CREDIT_BASED_RECONFIGURE_RSP", 2)
            }
        if code == 0x1A, data.count != fixed {
            throw .invalidDataLength(structure: name, expected: fixed, actual: data.count)
        }
        guard data.count >= fixed, (data.count - fixed) % 2 == 0 else {
            throw .invalidDataLength(structure: name, expected: fixed + 2 * max(1, (data.count - fixed + 1) / 2), actual: data.count)
        }
        var r = CodecByteReader(data)
        func cids(_ r: inout CodecByteReader) -> [UInt16] { (0..<(data.count - fixed) / 2).map { _ in r.u16() } }
        switch code {
        case 0x17:
            let (spsm, mtu, mps, credits) = (r.u16(), r.u16(), r.u16(), r.u16())
            return .creditBasedConnectionRequest(spsm: spsm, mtu: mtu, mps: mps, initialCredits: credits, sourceCIDs: cids(&r))
        case 0x18:
            let (mtu, mps, credits, result) = (r.u16(), r.u16(), r.u16(), r.u16())
            return .creditBasedConnectionResponse(
                mtu: mtu, mps: mps, initialCredits: credits, result: LECreditBasedConnectionResult(rawValue: result), destinationCIDs: cids(&r))
        case 0x19:
            let (mtu, mps) = (r.u16(), r.u16())
            return .creditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: cids(&r))
        default:
            return .creditBasedReconfigureResponse(result: CreditBasedReconfigureResult(rawValue: r.u16()))
        }
    }

    /// The data of codes 0x17–0x1A.
    func enhancedCreditBasedData(into w: inout CodecByteWriter) {
        switch self {
        case .creditBasedConnectionRequest(let spsm, let mtu, let mps, let credits, let cids):
            for v in [spsm, mtu, mps, credits] + cids { w.u16(v) }
        case .creditBasedConnectionResponse(let mtu, let mps, let credits, let result, let cids):
            for v in [mtu, mps, credits, result.rawValue] + cids { w.u16(v) }
        case .creditBasedReconfigureRequest(let mtu, let mps, let cids):
            for v in [mtu, mps] + cids { w.u16(v) }
        case .creditBasedReconfigureResponse(let result):
            w.u16(result.rawValue)
        default:
            break
        }
    }
}
