import GattCore

/// Reassembles the ACL data packets of one connection into L2CAP basic frames
/// (Core Spec Vol 3 Part A §7.2 fragmentation and recombination; Vol 4 Part E §5.4.2).
///
/// Keep one per connection handle and feed it every ACL packet of that connection,
/// in order. A first fragment (PB 0b00 or 0b10) starts a frame, continuations
/// (PB 0b01) extend it, and the frame is returned once its declared length is
/// reached. The L2CAP header itself may be split across fragments.
///
/// Malformed sequences never trap. They are reported in the output, and what was
/// wrong is dropped:
/// - a continuation with no frame in progress → `.continuationWithoutStart`, dropped;
/// - a first fragment while a frame is incomplete → `.incompleteFrameDiscarded`; the
///   incomplete frame is dropped and the new fragment starts a new frame;
/// - more bytes than the L2CAP length declares → `.frameOverflow`, whole frame dropped;
/// - a declared length above `maximumPayloadLength` → `.frameTooLong`, dropped
///   together with its continuations (they then report `.continuationWithoutStart`);
/// - PB 0b11 (BR/EDR "complete automatically-flushable") → `.invalidPacketBoundary`, dropped.
public struct ACLReassembler: Sendable {
    /// The largest L2CAP payload accepted (the MTU the host can receive, e.g. ATT MTU;
    /// at most 65,535).
    public let maximumPayloadLength: Int
    private var partial: [UInt8] = []
    private var inProgress = false

    public init(maximumPayloadLength: Int = L2CAPBasicFrame.maximumPayloadLength) {
        self.maximumPayloadLength = min(max(0, maximumPayloadLength), L2CAPBasicFrame.maximumPayloadLength)
    }

    /// True while a frame has started but is not complete.
    public var hasPartialFrame: Bool { inProgress }

    /// One result of `push(_:)`.
    public enum Output: Sendable, Hashable {
        case frame(L2CAPBasicFrame)
        case error(ACLReassemblyError)
    }

    /// Feeds one ACL packet; returns the frames it completes and the errors it
    /// caused (at most one error then at most one frame, in that order).
    public mutating func push(_ packet: HCIACLPacket) -> [Output] {
        var out: [Output] = []
        switch packet.packetBoundary {
        case .firstNonFlushable, .firstFlushable:
            if inProgress { out.append(.error(.incompleteFrameDiscarded(bytes: partial.count))) }
            partial = packet.data
            inProgress = true
        case .continuing:
            guard inProgress else {
                out.append(.error(.continuationWithoutStart(bytes: packet.data.count)))
                return out
            }
            partial.append(contentsOf: packet.data)
        case .completeFlushable:
            out.append(.error(.invalidPacketBoundary(packet.packetBoundary.rawValue)))
            return out
        }
        guard partial.count >= L2CAPBasicFrame.headerLength else { return out }
        let declared = Int(partial[0]) | Int(partial[1]) << 8
        if declared > maximumPayloadLength {
            out.append(.error(.frameTooLong(declared: declared, maximum: maximumPayloadLength)))
            reset()
            return out
        }
        let total = L2CAPBasicFrame.headerLength + declared
        if partial.count > total {
            out.append(.error(.frameOverflow(declared: declared, received: partial.count - L2CAPBasicFrame.headerLength)))
            reset()
        } else if partial.count == total {
            let cid = L2CAPChannelID(UInt16(partial[2]) | UInt16(partial[3]) << 8)
            out.append(.frame(L2CAPBasicFrame(channelID: cid, payload: Array(partial[L2CAPBasicFrame.headerLength...]))))
            reset()
        }
        return out
    }

    /// Drops any partial frame (e.g. on disconnection).
    public mutating func reset() {
        partial = []
        inProgress = false
    }
}

/// A malformed ACL fragment sequence (see `ACLReassembler`).
public enum ACLReassemblyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A continuation fragment arrived with no frame in progress; its bytes were dropped.
    case continuationWithoutStart(bytes: Int)
    /// A new first fragment arrived while a frame was incomplete; the incomplete
    /// frame (this many bytes, header included) was dropped.
    case incompleteFrameDiscarded(bytes: Int)
    /// The fragments carried more payload than the L2CAP length declared.
    case frameOverflow(declared: Int, received: Int)
    /// The L2CAP length exceeds the reassembler's maximum.
    case frameTooLong(declared: Int, maximum: Int)
    /// A packet boundary flag not used on LE.
    case invalidPacketBoundary(UInt8)

    public var description: String {
        switch self {
        case .continuationWithoutStart(let n): "ACL continuation fragment (\(n) bytes) without a first fragment; dropped"
        case .incompleteFrameDiscarded(let n): "new L2CAP frame started before the previous one completed; \(n) bytes dropped"
        case .frameOverflow(let declared, let received): "L2CAP frame declares \(declared) bytes but fragments carried \(received); dropped"
        case .frameTooLong(let declared, let maximum): "L2CAP frame of \(declared) bytes exceeds the maximum of \(maximum); dropped"
        case .invalidPacketBoundary(let pb): "ACL packet boundary flag 0b\(String(pb, radix: 2)) is not valid on LE; dropped"
        }
    }
}
