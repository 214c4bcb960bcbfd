import FuzzSupport
import GattCore
import GattHost

/// Fuzzes the Security Manager's responder (`PairingResponder`) the way a hostile central
/// and a confused host can drive it: SMP PDUs (random and truncated) in every pairing
/// state, interleaved with LTK requests, encryption changes, user answers and timers.
///
/// Input: one flags byte (IO capability, SC only, bondable, user confirmation), then
/// operations, each one byte (low 3 bits: which) and its data.
///
/// The oracle traps when a command the responder sends does not decode back to itself,
/// when a pairing completes or an LTK is handed out (random input cannot produce the
/// confirm values, public key and DHKey check a real pairing needs: either means a
/// half-checked pairing was accepted), or when anything is sent after the SMP timeout.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSMP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let flags = input.byte()
    let configuration = SecurityManagerConfiguration(
        ioCapability: SMPIOCapability(rawValue: flags % 5) ?? .noInputNoOutput, bondable: flags & 0x08 == 0,
        secureConnectionsOnly: flags & 0x10 != 0, minimumKeySize: 7 + Int(flags >> 5), confirmPairing: flags & 0x80 != 0)
    var responder = PairingResponder(
        configuration: configuration,
        local: SMPDeviceAddress(BluetoothAddress("C0:FF:EE:00:00:01")!, type: .public),
        peer: SMPDeviceAddress(BluetoothAddress("11:22:33:44:55:66")!, type: .random),
        keyPair: SMPKeyPair.debug, random: FuzzRandom(seed: UInt64(flags) &+ 0x5EED))
    var now: Duration = .zero
    var attempts = RepeatedAttempts()
    while !input.isAtEnd {
        let op = input.byte()
        let outputs: [SecurityManagerOutput]
        switch op & 0x07 {
        case 0, 1, 2:
            // A PDU: mostly a valid code with random (often truncated) data.
            let code = op & 0x08 == 0 ? UInt8(1 + Int(op >> 4) % 14) : op
            outputs = responder.receive([code] + input.chunk(), now: now, attempts: attempts)
            attempts.observe(outputs, peer: responder.peerIdentity, now: now)
        case 3:
            let ltk = responder.longTermKeyRequest(ediv: input.uint16(), rand: UInt64(input.uint16()))
            if ltk != nil { oracleViolation("an LTK was handed out for a pairing random input cannot complete") }
            outputs = []
        case 4:
            outputs = responder.encryptionChanged(enabled: op & 0x08 != 0, now: now)
        case 5:
            let answers: [PairingUserAnswer] = [.accept, .reject, .confirm(true), .confirm(false), .passkey(UInt32(input.uint16())), .passkey(1_000_000)]
            outputs = responder.respond(answers[Int(op >> 3) % answers.count], now: now)
        default:
            now += .milliseconds(Int(input.uint16()) * 10)
            outputs = responder.tick(now: now)
        }
        check(outputs, timedOut: responder.hasTimedOut)
    }
    return 0
}

private func check(_ outputs: [SecurityManagerOutput], timedOut: Bool) {
    for output in outputs {
        switch output {
        case .send(let command):
            if timedOut { oracleViolation("SMP sent \(command) after the timeout") }
            let bytes = command.encoded()
            guard let back = try? SMPCommand(decoding: bytes), back == command else {
                oracleViolation("the responder sent \(hex(bytes)), which does not decode back to \(command)")
            }
        case .event(.pairingComplete(let bond, _)):
            oracleViolation("a pairing completed from random input: \(bond)")
        case .event:
            break
        }
    }
}

/// A deterministic generator (SplitMix64), so a reproducer replays exactly.
struct FuzzRandom: RandomNumberGenerator, Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzSMPMain {
    static func main() { runLibFuzzer(fuzzSMP) }
}
