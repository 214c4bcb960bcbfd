import DequeModule
import GattCore

/// One credit-based channel of the H4 host: the link and our (source) CID, which is
/// unique on its link (Core Spec Vol 3 Part A §2.1).
///
/// An L2CAP channel, not an ATT bearer (`BearerID`): an app's channel carries SDUs for a
/// program and is no bearer at all, the fixed ATT bearer is no credit-based channel, and
/// only a channel on PSM 0x0027 is also an Enhanced ATT bearer (`BearerID(_:)`, `init(_:)`).
public struct CreditBasedChannelID: Sendable, Hashable, CustomStringConvertible {
    public var connection: ConnectionID
    public var cid: UInt16

    public init(connection: ConnectionID, cid: UInt16) {
        self.connection = connection
        self.cid = cid
    }

    /// The channel of an Enhanced ATT bearer (the unenhanced bearer's CID, 0x0004, names no
    /// credit-based channel).
    public init(_ bearer: BearerID) { self.init(connection: bearer.connection, cid: bearer.channel) }

    public var description: String { "connection \(connection.rawValue) CID \(codecHex(cid, digits: 4))" }
}

extension BearerID {
    /// The Enhanced ATT bearer a credit-based channel on PSM 0x0027 is.
    public init(_ channel: CreditBasedChannelID) { self.init(channel.connection, channel: channel.cid) }
}

/// The two credit-based modes on LE (Vol 3 Part A §3.4, §4.22, §4.25).
public enum CreditBasedFlowControlMode: Sendable, Equatable {
    /// LE Credit Based Flow Control mode (LE Credit Based Connection Request, 0x14).
    case leCreditBased
    /// Enhanced Credit Based Flow Control mode (Credit Based Connection Request, 0x17).
    case enhancedCreditBased
}

/// One end of a credit-based channel: its CID, the largest SDU it takes (MTU) and the
/// largest K-frame payload it takes (MPS) (Vol 3 Part A §4.22).
public struct CreditBasedEndpoint: Sendable, Equatable {
    public var cid: UInt16
    public var mtu: Int
    public var mps: Int

    public init(cid: UInt16, mtu: Int, mps: Int) {
        self.cid = cid
        self.mtu = mtu
        self.mps = mps
    }
}

/// What makes the receiver of K-frames disconnect a channel (Vol 3 Part A §3.4.3, §4.24).
public enum CreditBasedViolation: Error, Sendable, Equatable, CustomStringConvertible {
    /// A K-frame arrived while the sender had no credits left.
    case noCredits
    /// A K-frame's payload is longer than our MPS.
    case kFrameLargerThanMPS(length: Int, mps: Int)
    /// An SDU length field larger than our MTU.
    case sduLargerThanMTU(length: Int, mtu: Int)
    /// The K-frames of an SDU carry more bytes than its SDU length (or a first K-frame
    /// is too short to hold the SDU length).
    case sduLengthMismatch(declared: Int, received: Int)
    /// A Flow Control Credit Indication took the credits past 65535.
    case creditOverflow(credits: Int)

    public var description: String {
        switch self {
        case .noCredits: "K-frame received with no credits left"
        case .kFrameLargerThanMPS(let length, let mps): "K-frame of \(length) bytes exceeds our MPS \(mps)"
        case .sduLargerThanMTU(let length, let mtu): "SDU length \(length) exceeds our MTU \(mtu)"
        case .sduLengthMismatch(let declared, let received): "SDU length \(declared) but its K-frames carry \(received) bytes"
        case .creditOverflow(let credits): "credits would reach \(credits), past 65535"
        }
    }
}

/// An L2CAP channel in LE Credit Based or Enhanced Credit Based Flow Control mode (Vol 3
/// Part A §3.4, §10.1): the receiving half — K-frames reassembled into SDUs, and the
/// credits we give the peer, returned only once the layer above consumed an SDU. The
/// sending half (the peer's credits, the K-frames waiting for them) is in `ACLScheduler`.
public struct CreditBasedChannel: Sendable {
    public let id: CreditBasedChannelID
    public let mode: CreditBasedFlowControlMode
    public let psm: UInt16
    /// The `L2CAPChannelServer.id` the channel was accepted for.
    public let server: String
    public let local: CreditBasedEndpoint
    /// The peer's CID, MTU and MPS (MTU and MPS may grow by reconfiguration).
    public internal(set) var peer: CreditBasedEndpoint
    /// K-frames the peer may still send us.
    public private(set) var creditsGiven: Int
    /// The K-frame count of each SDU passed up and not consumed yet, oldest first.
    private var unconsumed: Deque<Int> = []
    /// The SDU being reassembled: its declared length, its bytes so far and its K-frames.
    private var partial: (length: Int, bytes: [UInt8], frames: Int)?

    /// Our MPS: a K-frame in one LE ACL data packet of 251 bytes (Data Length Extension),
    /// never more than the SDU length field and an MTU-sized SDU need.
    public static func mps(forMTU mtu: Int, minimum: Int) -> Int { max(minimum, min(247, mtu + 2)) }

    /// The K-frames one SDU of `length` bytes takes at `mps` (the first carries the 2-byte length).
    public static func kFrames(sduLength length: Int, mps: Int) -> Int { max(1, (length + 2 + mps - 1) / mps) }

    /// Our initial credits: two full SDUs, so the peer keeps sending while the first is consumed.
    public static func initialCredits(mtu: Int, mps: Int) -> Int { min(0xFFFF, 2 * kFrames(sduLength: mtu, mps: mps)) }

    public init(
        id: CreditBasedChannelID, mode: CreditBasedFlowControlMode, psm: UInt16, server: String, local: CreditBasedEndpoint,
        peer: CreditBasedEndpoint, initialCredits: Int
    ) {
        self.id = id
        self.mode = mode
        self.psm = psm
        self.server = server
        self.local = local
        self.peer = peer
        self.creditsGiven = initialCredits
    }

    /// What one K-frame (its payload, the information field) made.
    public enum Received: Sendable, Equatable {
        /// Part of an SDU.
        case partial
        /// The last K-frame of an SDU: the SDU, to pass up (then `consumed()` when taken).
        case sdu([UInt8])
        /// The peer broke a rule: the channel must be disconnected (§3.4.3).
        case violation(CreditBasedViolation)
    }

    /// One K-frame from the peer.
    public mutating func receive(kFrame payload: [UInt8]) -> Received {
        guard creditsGiven > 0 else { return .violation(.noCredits) }
        creditsGiven -= 1
        guard payload.count <= local.mps else { return .violation(.kFrameLargerThanMPS(length: payload.count, mps: local.mps)) }
        guard var p = partial else {
            guard payload.count >= 2 else { return .violation(.sduLengthMismatch(declared: 2, received: payload.count)) }
            let length = Int(payload[0]) | Int(payload[1]) << 8
            guard length <= local.mtu else { return .violation(.sduLargerThanMTU(length: length, mtu: local.mtu)) }
            return complete((length, Array(payload[2...]), 1))
        }
        partial = nil
        p.bytes += payload
        p.frames += 1
        return complete(p)
    }

    private mutating func complete(_ p: (length: Int, bytes: [UInt8], frames: Int)) -> Received {
        if p.bytes.count > p.length { return .violation(.sduLengthMismatch(declared: p.length, received: p.bytes.count)) }
        guard p.bytes.count == p.length else {
            partial = p
            return .partial
        }
        unconsumed.append(p.frames)
        return .sdu(p.bytes)
    }

    /// The layer above took the oldest SDU passed up: the credits it used, to give back
    /// in a Flow Control Credit Indication (0 when no SDU was waiting).
    public mutating func consumed() -> Int {
        guard let n = unconsumed.popFirst() else { return 0 }
        creditsGiven += n
        return n
    }

    /// `sdu` as K-frame payloads of at most `mps` bytes, the first led by the SDU length (§3.4.3).
    public static func segment(_ sdu: [UInt8], mps: Int) -> [[UInt8]] {
        let first = min(sdu.count, mps - 2)
        var frames: [[UInt8]] = [[UInt8(truncatingIfNeeded: sdu.count), UInt8(truncatingIfNeeded: sdu.count >> 8)] + sdu[..<first]]
        var i = first
        while i < sdu.count {
            let end = min(sdu.count, i + mps)
            frames.append(Array(sdu[i..<end]))
            i = end
        }
        return frames
    }
}
