import GattCore

/// A signalling command on the LE signalling channel, CID 0x0005 (Core Spec
/// Vol 3 Part A §4): code, identifier, 16-bit data length, data. On LE each
/// C-frame carries exactly one command.
public struct LESignallingPDU: Sendable, Hashable {
    /// Matches a response to its request; 0x00 is never valid in a request.
    public var identifier: UInt8
    public var command: LESignallingCommand

    public static let headerLength = 4
    /// MTU_sig on LE: the signalling channel's minimum (and our) MTU (§4).
    public static let minimumSignallingMTU = 23

    public init(identifier: UInt8, command: LESignallingCommand) {
        self.identifier = identifier
        self.command = command
    }

    /// Decodes the payload of a C-frame. Known codes must have their exact data
    /// length (else `.invalidDataLength`); unknown codes decode as `.unknown` so the
    /// host can answer Command Reject "Command not understood".
    public init(decoding bytes: [UInt8]) throws(L2CAPDecodingError) {
        guard bytes.count >= Self.headerLength else {
            throw .truncated(structure: "LE signalling command", needed: Self.headerLength, actual: bytes.count)
        }
        let code = bytes[0]
        let declared = Int(bytes[2]) | Int(bytes[3]) << 8
        guard bytes.count - Self.headerLength == declared else {
            throw .lengthMismatch(structure: "LE signalling command", declared: declared, actual: bytes.count - Self.headerLength)
        }
        self.identifier = bytes[1]
        self.command = try LESignallingCommand(code: code, data: Array(bytes[Self.headerLength...]))
    }

    /// The C-frame payload.
    public func encoded() -> [UInt8] {
        let data = command.data.prefix(0xFFFF)
        var w = CodecByteWriter(capacity: Self.headerLength + data.count)
        w.u8(command.code)
        w.u8(identifier)
        w.u16(UInt16(data.count))
        w.append(data)
        return w.bytes
    }

    /// The whole L2CAP frame on CID 0x0005.
    public var frame: L2CAPBasicFrame { L2CAPBasicFrame(channelID: .leSignalling, payload: encoded()) }
}

/// The reason of an L2CAP_COMMAND_REJECT_RSP (Core Spec Vol 3 Part A §4.1).
public enum LESignallingRejectReason: Sendable, Hashable {
    /// 0x0000.
    case commandNotUnderstood
    /// 0x0001, with the receiver's actual signalling MTU.
    case signallingMTUExceeded(actualMTU: UInt16)
    /// 0x0002, with the local (source of the rejected request's receiver) and remote CIDs.
    case invalidCIDInRequest(localCID: UInt16, remoteCID: UInt16)
    /// A reserved reason code, with its raw data.
    case other(reason: UInt16, data: [UInt8])
}

extension LESignallingPDU {
    /// The answer of a peripheral that offers no dynamic L2CAP channels and never
    /// acts as central, or nil when `request` needs no answer (responses, indications,
    /// Command Reject). Pure policy, for the host:
    /// - LE Credit Based Connection Request → response with result 0x0002
    ///   "LE_PSM not supported" (all other fields 0); Credit Based Connection Request the
    ///   same, with a 0x0000 CID for each channel asked for; Credit Based Reconfigure Request
    ///   → 0x0003 "invalid Destination CID";
    /// - Disconnection Request → Command Reject "invalid CID in request" (no channel is open);
    /// - Connection Parameter Update Request (only a central may receive it) and any
    ///   unknown code → Command Reject "command not understood" (§4.1: the reject
    ///   answers any command with an unknown code; Command Reject itself is known,
    ///   so two hosts never reject each other's rejects).
    /// The Connection Parameter Update Response is not answered: the host handles it.
    public static func peripheralResponse(to request: LESignallingPDU) -> LESignallingPDU? {
        let command: LESignallingCommand
        switch request.command {
        case .leCreditBasedConnectionRequest:
            command = .leCreditBasedConnectionResponse(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .lePSMNotSupported)
        case .creditBasedConnectionRequest(_, _, _, _, let cids):
            command = .creditBasedConnectionResponse(
                mtu: 0, mps: 0, initialCredits: 0, result: .lePSMNotSupported, destinationCIDs: cids.map { _ in 0 })
        case .creditBasedReconfigureRequest:
            command = .creditBasedReconfigureResponse(result: .invalidDestinationCID)
        case .disconnectionRequest(let dcid, let scid):
            command = .commandReject(.invalidCIDInRequest(localCID: dcid, remoteCID: scid))
        case .connectionParameterUpdateRequest:
            command = .commandReject(.commandNotUnderstood)
        case .unknown:
            command = .commandReject(.commandNotUnderstood)
        default:
            return nil
        }
        return LESignallingPDU(identifier: request.identifier, command: command)
    }

    /// Command Reject "command not understood" for `identifier` — the answer to a
    /// C-frame that could not be decoded at all (use identifier 0 when even that is unknown).
    public static func commandNotUnderstood(identifier: UInt8) -> LESignallingPDU {
        LESignallingPDU(identifier: identifier, command: .commandReject(.commandNotUnderstood))
    }
}
