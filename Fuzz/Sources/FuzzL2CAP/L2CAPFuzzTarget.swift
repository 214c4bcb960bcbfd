import FuzzSupport
import GattCore
import GattHost

/// Fuzzes L2CAP signalling and credit-based channels below the host: LE signalling C-frames
/// (`LESignallingPDU`) and the K-frames of one `CreditBasedChannel`, interleaved with the
/// layer above consuming SDUs.
///
/// Input: a flags byte (our MTU 23 + 8 × flags, MPS from it), then operations, each one
/// byte (low 2 bits: which) and its data: a signalling command, a K-frame, a consume, an
/// SDU segmented and reassembled.
///
/// The oracle traps when a command that decodes does not encode back to its bytes; when an
/// SDU passed up is longer than our MTU; when the credits we gave plus those of the SDUs
/// not consumed plus the K-frames of the SDU in reassembly do not add up to what we gave
/// at first (until a violation, which ends the channel); or when an SDU segmented at any
/// MPS does not reassemble to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzL2CAP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let mtu = 23 + 8 * Int(flags)
    let mps = CreditBasedChannel.mps(forMTU: mtu, minimum: 23)
    let initial = CreditBasedChannel.initialCredits(mtu: mtu, mps: mps)
    let id = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x40)
    var channel: CreditBasedChannel? = CreditBasedChannel(
        id: id, mode: .leCreditBased, psm: 0x80, server: "fuzz", local: CreditBasedEndpoint(cid: 0x40, mtu: mtu, mps: mps),
        peer: CreditBasedEndpoint(cid: 0x41, mtu: 23, mps: 23), initialCredits: initial)
    var unconsumed: [Int] = []  // K-frames of each SDU passed up
    var partialFrames = 0
    while !input.isAtEnd {
        let op = input.byte()
        switch op & 0x03 {
        case 0:
            // A signalling command: mostly a known code, random (often wrong) data.
            let code = op & 0x04 == 0 ? UInt8(1 + Int(op >> 3) % 0x1A) : op
            let bytes = [code, input.byte()] + { (d: [UInt8]) in [UInt8(d.count & 0xFF), UInt8(d.count >> 8)] + d }(input.chunk())
            trace("signalling \(bytes)")
            if let pdu = try? LESignallingPDU(decoding: bytes), pdu.encoded() != bytes {
                oracleViolation("\(pdu) encodes as \(pdu.encoded()), decoded from \(bytes)")
            }
        case 1:
            guard var c = channel else { continue }
            let frame = input.chunk() + (op & 0x04 != 0 ? input.chunk() : [])
            let received = c.receive(kFrame: frame)
            trace("K-frame of \(frame.count) bytes: \(received)")
            switch received {
            case .partial: partialFrames += 1
            case .sdu(let sdu):
                if sdu.count > mtu { oracleViolation("SDU of \(sdu.count) bytes passed up, MTU \(mtu)") }
                unconsumed.append(partialFrames + 1)
                partialFrames = 0
            case .violation:
                channel = nil
                continue
            }
            channel = c
        case 2:
            guard var c = channel else { continue }
            let back = c.consumed()
            if back != (unconsumed.isEmpty ? 0 : unconsumed.removeFirst()) { oracleViolation("\(back) credits back for the oldest SDU") }
            channel = c
        default:
            let sdu = input.chunk()
            let at = 3 + Int(input.byte())
            var r = CreditBasedChannel(
                id: id, mode: .enhancedCreditBased, psm: 0x80, server: "fuzz", local: CreditBasedEndpoint(cid: 0x40, mtu: 255, mps: at),
                peer: CreditBasedEndpoint(cid: 0x41, mtu: 255, mps: at), initialCredits: 0xFFFF)
            let frames = CreditBasedChannel.segment(sdu, mps: at)
            if frames.count != CreditBasedChannel.kFrames(sduLength: sdu.count, mps: at) { oracleViolation("\(frames.count) K-frames at MPS \(at)") }
            var out: CreditBasedChannel.Received = .partial
            for f in frames { out = r.receive(kFrame: f) }
            if out != .sdu(sdu) { oracleViolation("an SDU of \(sdu.count) bytes at MPS \(at) reassembled as \(out)") }
        }
        if let c = channel, c.creditsGiven + unconsumed.reduce(0, +) + partialFrames != initial {
            oracleViolation("credits out of step: \(c.creditsGiven) given, \(unconsumed) unconsumed, \(partialFrames) in reassembly, \(initial) at first")
        }
    }
    return 0
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzL2CAPMain {
    static func main() { runLibFuzzer(fuzzL2CAP) }
}
