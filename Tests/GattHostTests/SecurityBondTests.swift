import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Bond helpers: RPA resolution with ah (Core Spec Vol 3 Part H §2.2.2,
/// Vol 6 Part B §1.3.2.3) and the LTK lookup for LE Long Term Key Request.
@Suite struct SecurityBondTests {
    static let irk = spec("ec0234a3 57c8ad05 341010a6 0a397d9b")
    /// The ah sample as an address: prand 0x708194 ‖ hash 0x0dfbaa.
    static let rpa = BluetoothAddress("70:81:94:0D:FB:AA")!

    static func bond(_ address: String, irk: [UInt8]? = nil, sc: Bool = true, ediv: UInt16 = 0, rand: UInt64 = 0, ltk: UInt8 = 1) -> Bond {
        Bond(
            address: BluetoothAddress(address)!, addressType: .public, longTermKey: Array(repeating: ltk, count: 16), ediv: ediv,
            rand: rand, keySize: 16, authenticated: false, secureConnections: sc, peerIRK: irk)
    }

    @Test func resolvesTheSpecSampleRPA() {
        let bonds = [Self.bond("00:00:00:00:00:01", irk: Array(repeating: 9, count: 16)), Self.bond("00:00:00:00:00:02", irk: Self.irk)]
        #expect(Bond.isResolvablePrivateAddress(Self.rpa))
        #expect(bonds.resolving(Self.rpa)?.address == BluetoothAddress("00:00:00:00:00:02"))
        #expect(bonds.resolving(BluetoothAddress("70:81:94:0D:FB:AB")!) == nil, "hash differs")
        // Same low 46 bits but a static random address (0b11): not an RPA.
        #expect(bonds.resolving(BluetoothAddress("F0:81:94:0D:FB:AA")!) == nil)
        #expect([Self.bond("00:00:00:00:00:03")].resolving(Self.rpa) == nil, "no IRK")
        #expect(bonds.bond(for: BluetoothAddress("00:00:00:00:00:01")!)?.peerIRK == Array(repeating: 9, count: 16))
        #expect(bonds.bond(for: Self.rpa)?.address == BluetoothAddress("00:00:00:00:00:02"))
    }

    @Test func longTermKeyLookup() {
        let bonds = [
            Self.bond("00:00:00:00:00:01", irk: Self.irk, ltk: 0xAA),
            Self.bond("00:00:00:00:00:02", sc: false, ediv: 0x1234, rand: 0x55, ltk: 0xBB),
        ]
        #expect(bonds.longTermKey(ediv: 0, rand: 0, address: BluetoothAddress("00:00:00:00:00:01")!) == Array(repeating: 0xAA, count: 16))
        #expect(bonds.longTermKey(ediv: 0, rand: 0, address: Self.rpa) == Array(repeating: 0xAA, count: 16), "via the RPA")
        #expect(bonds.longTermKey(ediv: 0x1234, rand: 0x55, address: .zero) == Array(repeating: 0xBB, count: 16))
        #expect(bonds.longTermKey(ediv: 0x1234, rand: 0x56, address: .zero) == nil)
        #expect(bonds.longTermKey(ediv: 0, rand: 0, address: BluetoothAddress("00:00:00:00:00:02")!) == nil, "legacy bond needs EDIV/Rand")
        #expect(bonds.longTermKey(ediv: 0, rand: 0, address: BluetoothAddress("00:00:00:00:00:09")!) == nil)
    }
}

/// Random and truncated SMP PDUs in every pairing state: nothing traps, nothing
/// completes, and a pairing that fails leaves no key for the controller.
@Suite struct SMPFuzzTests {
    /// Harnesses parked in each state reachable by a scripted central.
    static func statesUnderTest() -> [(String, SMPHarness)] {
        var list: [(String, SMPHarness)] = [("idle", SMPHarness())]
        var t = SMPHarness(.init(confirmPairing: true))
        _ = t.send(.pairingRequest(t.central.features))
        list.append(("awaiting acceptance", t))
        t = SMPHarness(central: SMPLegacyPairingTests.legacyCentral)
        _ = try? t.featureExchange()
        list.append(("legacy confirm", t))
        _ = t.send(.pairingConfirm(Array(repeating: 1, count: 16)))
        list.append(("legacy random", t))
        t = SMPHarness(.init(ioCapability: .keyboardOnly), central: SMPLegacyPairingTests.legacyCentral)
        t.central.features.authenticationRequirements.insert(.mitm)
        t.central.features.ioCapability = .displayOnly
        _ = try? t.featureExchange()
        list.append(("legacy passkey", t))
        t = SMPHarness()
        _ = try? t.featureExchange()
        list.append(("SC public key", t))
        _ = t.publicKeyExchange()
        list.append(("SC nonce", t))
        _ = t.send(.pairingRandom(t.central.nonce()))
        list.append(("SC DHKey check", t))
        t = SMPHarness(.init(ioCapability: .displayOnly), central: ScriptedCentral(io: .keyboardOnly, auth: [.mitm, .secureConnections]))
        _ = try? t.featureExchange()
        _ = t.publicKeyExchange()
        list.append(("SC passkey confirm", t))
        _ = t.send(.pairingConfirm(Array(repeating: 3, count: 16)))
        list.append(("SC passkey random", t))
        t = SMPHarness(.init(ioCapability: .keyboardOnly), central: ScriptedCentral(io: .displayOnly, auth: [.mitm, .secureConnections]))
        _ = try? t.featureExchange()
        _ = t.publicKeyExchange()
        list.append(("SC passkey input", t))
        t = SMPHarness(.init(ioCapability: .displayYesNo), central: ScriptedCentral(io: .displayYesNo, auth: [.mitm, .secureConnections]))
        _ = try? t.featureExchange()
        _ = t.publicKeyExchange()
        _ = t.send(.pairingRandom(t.central.nonce()))
        list.append(("SC numeric comparison", t))
        t = SMPHarness(central: SMPLegacyPairingTests.legacyCentral)
        if let rsp = try? t.featureExchange() { _ = try? t.legacyExchange(tk: Array(repeating: 0, count: 16), rsp: rsp) }
        list.append(("awaiting encryption", t))
        _ = t.responder.encryptionChanged(enabled: true, now: t.now)
        list.append(("key distribution", t))
        return list
    }

    @Test func statesAreWhereTheNamesSay() {
        let states = Self.statesUnderTest()
        #expect(states.count == 14)
        for (name, t) in states {
            #expect(t.responder.isPairing == (name != "idle"), "\(name)")
        }
        #expect(states.filter { $0.1.responder.longTermKeyRequest(ediv: 0, rand: 0) != nil }.map(\.0) == ["awaiting encryption"])
    }

    static func randomPDU(_ rng: inout SplitMix64) -> [UInt8] {
        let valid = SMPCommandTests.samples.map(\.1)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0:
            // A valid PDU cut short (or whole).
            let pdu = valid.randomElement(using: &rng) ?? []
            return Array(pdu.prefix(Int.random(in: 0...pdu.count, using: &rng)))
        case 1:
            // A known code with random data of a plausible or exact length.
            let code = UInt8.random(in: 1...0x0E, using: &rng)
            let n = Bool.random(using: &rng) ? (SMPCommand.dataLength(of: SMPCode(rawValue: code)) ?? 0) : Int.random(in: 0...70, using: &rng)
            return [code] + (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
        default:
            return (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
    }

    @Test func randomAndTruncatedPDUsInEveryState() {
        var rng = SplitMix64(seed: 0x5EC0)
        var failures = 0
        for (name, start) in Self.statesUnderTest() {
            for _ in 0..<150 {
                var t = start
                for step in 0..<Int.random(in: 1...6, using: &rng) {
                    t.now += .milliseconds(Int.random(in: 0...12_000, using: &rng))
                    let out: [SecurityManagerOutput]
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0: out = t.responder.tick(now: t.now)
                    case 1: out = t.answer([.accept, .reject, .passkey(123_456), .confirm(true)].randomElement(using: &rng) ?? .accept)
                    case 2: out = t.responder.encryptionChanged(enabled: Bool.random(using: &rng), now: t.now)
                    default: out = t.responder.receive(Self.randomPDU(&rng), now: t.now)
                    }
                    #expect(out.bond == nil, "\(name), step \(step): \(out)")
                    if out.sent.contains(where: { $0.code == .pairingFailed }) || out.events.contains(.timedOut) {
                        failures += 1
                        #expect(!t.responder.isPairing, "\(name)")
                        #expect(t.responder.longTermKeyRequest(ediv: 0, rand: 0) == nil, "\(name): a failed pairing gives no key")
                    }
                }
            }
        }
        #expect(failures > 500, "the fuzz reaches the failure paths")
    }
}
