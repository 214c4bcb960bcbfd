import GattCore

/// The LE signalling commands (Core Spec Vol 3 Part A §4).
public enum LESignallingCommand: Sendable, Hashable {
    /// L2CAP_COMMAND_REJECT_RSP (0x01, §4.1).
    case commandReject(LESignallingRejectReason)
    /// L2CAP_DISCONNECTION_REQ (0x06, §4.6).
    case disconnectionRequest(destinationCID: UInt16, sourceCID: UInt16)
    /// L2CAP_DISCONNECTION_RSP (0x07, §4.7).
    case disconnectionResponse(destinationCID: UInt16, sourceCID: UInt16)
    /// L2CAP_CONNECTION_PARAMETER_UPDATE_REQ (0x12, §4.20), peripheral → central.
    /// Units: interval 1.25 ms, timeout 10 ms.
    case connectionParameterUpdateRequest(LEConnectionParameters)
    /// L2CAP_CONNECTION_PARAMETER_UPDATE_RSP (0x13, §4.21): 0x0000 accepted, 0x0001 rejected.
    case connectionParameterUpdateResponse(result: UInt16)
    /// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ (0x14, §4.22).
    case leCreditBasedConnectionRequest(lePSM: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16)
    /// L2CAP_LE_CREDIT_BASED_CONNECTION_RSP (0x15, §4.23).
    case leCreditBasedConnectionResponse(
        destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: LECreditBasedConnectionResult)
    /// L2CAP_FLOW_CONTROL_CREDIT_IND (0x16, §4.24).
    case flowControlCreditIndication(cid: UInt16, credits: UInt16)
    /// L2CAP_CREDIT_BASED_CONNECTION_REQ (0x17, §4.25): up to 5 channels in Enhanced Credit Based mode.
    case creditBasedConnectionRequest(spsm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [UInt16])
    /// L2CAP_CREDIT_BASED_CONNECTION_RSP (0x18, §4.26): 0x0000 for each refused channel's CID.
    case creditBasedConnectionResponse(
        mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: LECreditBasedConnectionResult, destinationCIDs: [UInt16])
    /// L2CAP_CREDIT_BASED_RECONFIGURE_REQ (0x19, §4.27): the sender's new MTU and MPS for its channels `destinationCIDs`.
    case creditBasedReconfigureRequest(mtu: UInt16, mps: UInt16, destinationCIDs: [UInt16])
    /// L2CAP_CREDIT_BASED_RECONFIGURE_RSP (0x1A, §4.28).
    case creditBasedReconfigureResponse(result: CreditBasedReconfigureResult)
    /// Any other code, with its raw data.
    case unknown(code: UInt8, data: [UInt8])

    public var code: UInt8 {
        switch self {
        case .commandReject: 0x01
        case .disconnectionRequest: 0x06
        case .disconnectionResponse: 0x07
        case .connectionParameterUpdateRequest: 0x12
        case .connectionParameterUpdateResponse: 0x13
        case .leCreditBasedConnectionRequest: 0x14
        case .leCreditBasedConnectionResponse: 0x15
        case .flowControlCreditIndication: 0x16
        case .creditBasedConnectionRequest: 0x17
        case .creditBasedConnectionResponse: 0x18
        case .creditBasedReconfigureRequest: 0x19
        case .creditBasedReconfigureResponse: 0x1A
        case .unknown(let code, _): code
        }
    }

    /// True for the requests this codec models (they need an answer).
    public var isRequest: Bool {
        switch self {
        case .disconnectionRequest, .connectionParameterUpdateRequest, .leCreditBasedConnectionRequest, .creditBasedConnectionRequest,
            .creditBasedReconfigureRequest:
            true
        default: false
        }
    }

    init(code: UInt8, data: [UInt8]) throws(L2CAPDecodingError) {
        func expect(_ n: Int, _ name: String) throws(L2CAPDecodingError) -> CodecByteReader {
            guard data.count == n else { throw .invalidDataLength(structure: name, expected: n, actual: data.count) }
            return CodecByteReader(data)
        }
        switch code {
        case 0x01:
            guard data.count >= 2 else {
                throw .invalidDataLength(structure: "L2CAP_COMMAND_REJECT_RSP", expected: 2, actual: data.count)
            }
            var r = CodecByteReader(data)
            let reason = r.u16()
            let rest = r.rest()
            switch (reason, rest.count) {
            case (0x0000, 0): self = .commandReject(.commandNotUnderstood)
            case (0x0001, 2):
                var rr = CodecByteReader(rest)
                self = .commandReject(.signallingMTUExceeded(actualMTU: rr.u16()))
            case (0x0002, 4):
                var rr = CodecByteReader(rest)
                self = .commandReject(.invalidCIDInRequest(localCID: rr.u16(), remoteCID: rr.u16()))
            case (0x0000...0x0002, _):
                let expected = reason == 0 ? 2 : (reason == 1 ? 4 : 6)
                throw .invalidDataLength(structure: "L2CAP_COMMAND_REJECT_RSP", expected: expected, actual: data.count)
            default: self = .commandReject(.other(reason: reason, data: rest))
            }
        case 0x06:
            var r = try expect(4, "L2CAP_DISCONNECTION_REQ")
            self = .disconnectionRequest(destinationCID: r.u16(), sourceCID: r.u16())
        case 0x07:
            var r = try expect(4, "L2CAP_DISCONNECTION_RSP")
            self = .disconnectionResponse(destinationCID: r.u16(), sourceCID: r.u16())
        case 0x12:
            var r = try expect(8, "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ")
            self = .connectionParameterUpdateRequest(
                LEConnectionParameters(intervalMin: r.u16(), intervalMax: r.u16(), latency: r.u16(), supervisionTimeout: r.u16()))
        case 0x13:
            var r = try expect(2, "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP")
            self = .connectionParameterUpdateResponse(result: r.u16())
        case 0x14:
            var r = try expect(10, "L2CAP_LE_CREDIT_BASED_CONNECTION_REQ")
            self = .leCreditBasedConnectionRequest(lePSM: r.u16(), sourceCID: r.u16(), mtu: r.u16(), mps: r.u16(), initialCredits: r.u16())
        case 0x15:
            var r = try expect(10, "L2CAP_LE_CREDIT_BASED_CONNECTION_RSP")
            self = .leCreditBasedConnectionResponse(
                destinationCID: r.u16(), mtu: r.u16(), mps: r.u16(), initialCredits: r.u16(),
                result: LECreditBasedConnectionResult(rawValue: r.u16()))
        case 0x16:
            var r = try expect(4, "L2CAP_FLOW_CONTROL_CREDIT_IND")
            self = .flowControlCreditIndication(cid: r.u16(), credits: r.u16())
        case 0x17...0x1A:
            self = try Self.enhancedCreditBased(code: code, data: data)
        default:
            self = .unknown(code: code, data: data)
        }
    }

    /// The command data (after code, identifier and length).
    public var data: [UInt8] {
        var w = CodecByteWriter(capacity: 10)
        switch self {
        case .commandReject(let reason):
            switch reason {
            case .commandNotUnderstood: w.u16(0x0000)
            case .signallingMTUExceeded(let mtu):
                w.u16(0x0001)
                w.u16(mtu)
            case .invalidCIDInRequest(let local, let remote):
                w.u16(0x0002)
                w.u16(local)
                w.u16(remote)
            case .other(let code, let data):
                w.u16(code)
                w.append(data)
            }
        case .disconnectionRequest(let dcid, let scid), .disconnectionResponse(let dcid, let scid):
            w.u16(dcid)
            w.u16(scid)
        case .connectionParameterUpdateRequest(let p):
            w.u16(p.intervalMin)
            w.u16(p.intervalMax)
            w.u16(p.latency)
            w.u16(p.supervisionTimeout)
        case .connectionParameterUpdateResponse(let result): w.u16(result)
        case .leCreditBasedConnectionRequest(let psm, let scid, let mtu, let mps, let credits):
            w.u16(psm)
            w.u16(scid)
            w.u16(mtu)
            w.u16(mps)
            w.u16(credits)
        case .leCreditBasedConnectionResponse(let dcid, let mtu, let mps, let credits, let result):
            w.u16(dcid)
            w.u16(mtu)
            w.u16(mps)
            w.u16(credits)
            w.u16(result.rawValue)
        case .flowControlCreditIndication(let cid, let credits):
            w.u16(cid)
            w.u16(credits)
        case .creditBasedConnectionRequest, .creditBasedConnectionResponse, .creditBasedReconfigureRequest,
            .creditBasedReconfigureResponse:
            enhancedCreditBasedData(into: &w)
        case .unknown(_, let data): w.append(data)
        }
        return w.bytes
    }
}
