import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

@Suite struct L2CAPSignallingTests {
    static let cases: [(String, LESignallingPDU)] = [
        ("01 07 02 00 00 00", LESignallingPDU(identifier: 7, command: .commandReject(.commandNotUnderstood))),
        ("01 07 04 00 01 00 17 00", LESignallingPDU(identifier: 7, command: .commandReject(.signallingMTUExceeded(actualMTU: 23)))),
        ("01 07 06 00 02 00 40 00 41 00", LESignallingPDU(identifier: 7, command: .commandReject(.invalidCIDInRequest(localCID: 0x40, remoteCID: 0x41)))),
        ("01 07 03 00 09 00 AA", LESignallingPDU(identifier: 7, command: .commandReject(.other(reason: 9, data: [0xAA])))),
        ("06 02 04 00 40 00 41 00", LESignallingPDU(identifier: 2, command: .disconnectionRequest(destinationCID: 0x40, sourceCID: 0x41))),
        ("07 02 04 00 40 00 41 00", LESignallingPDU(identifier: 2, command: .disconnectionResponse(destinationCID: 0x40, sourceCID: 0x41))),
        (
            "12 01 08 00 18 00 28 00 00 00 C8 00",
            LESignallingPDU(
                identifier: 1,
                command: .connectionParameterUpdateRequest(LEConnectionParameters(intervalMin: 0x18, intervalMax: 0x28, latency: 0, supervisionTimeout: 200)))
        ),
        ("13 01 02 00 01 00", LESignallingPDU(identifier: 1, command: .connectionParameterUpdateResponse(result: 1))),
        (
            "14 03 0A 00 80 00 40 00 00 01 17 00 05 00",
            LESignallingPDU(identifier: 3, command: .leCreditBasedConnectionRequest(lePSM: 0x80, sourceCID: 0x40, mtu: 256, mps: 23, initialCredits: 5))
        ),
        (
            "15 03 0A 00 00 00 00 00 00 00 00 00 02 00",
            LESignallingPDU(
                identifier: 3, command: .leCreditBasedConnectionResponse(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: .lePSMNotSupported))
        ),
        ("16 04 04 00 40 00 0A 00", LESignallingPDU(identifier: 4, command: .flowControlCreditIndication(cid: 0x40, credits: 10))),
        // Credit Based Connection Request/Response and Reconfigure Request/Response (§4.25–§4.28).
        (
            "17 05 0C 00 27 00 40 00 41 00 05 00 40 00 41 00",
            LESignallingPDU(identifier: 5, command: .creditBasedConnectionRequest(spsm: 0x27, mtu: 64, mps: 65, initialCredits: 5, sourceCIDs: [0x40, 0x41]))
        ),
        (
            "18 05 0C 00 00 02 F7 00 12 00 0A 00 40 00 00 00",
            LESignallingPDU(
                identifier: 5,
                command: .creditBasedConnectionResponse(
                    mtu: 512, mps: 247, initialCredits: 18, result: .sourceCIDAlreadyAllocated, destinationCIDs: [0x40, 0]))
        ),
        ("19 06 08 00 00 01 F7 00 40 00 41 00", LESignallingPDU(identifier: 6, command: .creditBasedReconfigureRequest(mtu: 256, mps: 247, destinationCIDs: [0x40, 0x41]))),
        ("1A 06 02 00 01 00", LESignallingPDU(identifier: 6, command: .creditBasedReconfigureResponse(result: .mtuReductionNotAllowed))),
        ("1B 05 02 00 AB CD", LESignallingPDU(identifier: 5, command: .unknown(code: 0x1B, data: [0xAB, 0xCD]))),
        ("0A 05 00 00", LESignallingPDU(identifier: 5, command: .unknown(code: 0x0A, data: []))),
    ]

    @Test func roundTrips() throws {
        for (bytes, pdu) in Self.cases {
            #expect(try LESignallingPDU(decoding: h(bytes)) == pdu, "\(bytes)")
            #expect(pdu.encoded() == h(bytes), "\(bytes)")
        }
        #expect(try LESignallingPDU(identifier: 1, command: .connectionParameterUpdateResponse(result: 0)).frame.encoded() == h("06 00 05 00 13 01 02 00 00 00"))
    }

    @Test func rejectsMalformed() throws {
        #expect(throws: L2CAPDecodingError.truncated(structure: "LE signalling command", needed: 4, actual: 3)) { try LESignallingPDU(decoding: h("12 01 08")) }
        #expect(throws: L2CAPDecodingError.lengthMismatch(structure: "LE signalling command", declared: 8, actual: 7)) {
            try LESignallingPDU(decoding: h("12 01 08 00 18 00 28 00 00 00 C8"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ", expected: 8, actual: 6)) {
            try LESignallingPDU(decoding: h("12 01 06 00 18 00 28 00 00 00"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_COMMAND_REJECT_RSP", expected: 2, actual: 1)) {
            try LESignallingPDU(decoding: h("01 01 01 00 00"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_COMMAND_REJECT_RSP", expected: 4, actual: 2)) {
            try LESignallingPDU(decoding: h("01 01 02 00 01 00"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_COMMAND_REJECT_RSP", expected: 2, actual: 3)) {
            try LESignallingPDU(decoding: h("01 01 03 00 00 00 00"))
        }
        for code: UInt8 in [0x06, 0x07, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A] {
            #expect(throws: L2CAPDecodingError.self, "code \(code)") { try LESignallingPDU(decoding: [code, 1, 1, 0, 0]) }
        }
        // The CID lists: whole 16-bit values after the fixed fields; the reconfigure response is exactly 2 bytes.
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_CREDIT_BASED_CONNECTION_REQ", expected: 10, actual: 9)) {
            try LESignallingPDU(decoding: h("17 01 09 00 27 00 40 00 40 00 05 00 40"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_CREDIT_BASED_RECONFIGURE_REQ", expected: 6, actual: 5)) {
            try LESignallingPDU(decoding: h("19 01 05 00 40 00 40 00 40"))
        }
        #expect(throws: L2CAPDecodingError.invalidDataLength(structure: "L2CAP_CREDIT_BASED_RECONFIGURE_RSP", expected: 2, actual: 4)) {
            try LESignallingPDU(decoding: h("1A 01 04 00 00 00 00 00"))
        }
        // No CIDs, or more than five: decoded (the host answers with a result).
        #expect(try LESignallingPDU(decoding: h("17 01 08 00 27 00 40 00 40 00 05 00")).command
            == .creditBasedConnectionRequest(spsm: 0x27, mtu: 64, mps: 64, initialCredits: 5, sourceCIDs: []))
    }

    @Test func peripheralPolicy() {
        func answer(_ bytes: String) -> [UInt8]? {
            guard let pdu = try? LESignallingPDU(decoding: h(bytes)) else { return nil }
            return LESignallingPDU.peripheralResponse(to: pdu)?.encoded()
        }
        // LE credit-based connection: refused, LE_PSM not supported.
        #expect(answer("14 03 0A 00 80 00 40 00 00 01 17 00 05 00") == h("15 03 0A 00 00 00 00 00 00 00 00 00 02 00"))
        // Unknown code: Command Reject, command not understood, same identifier.
        #expect(answer("1B 05 02 00 AB CD") == h("01 05 02 00 00 00"))
        // Credit Based Connection Request: all refused, SPSM not supported, one 0x0000 per CID;
        // Reconfigure Request: invalid Destination CID.
        #expect(answer("17 05 0C 00 27 00 40 00 40 00 05 00 40 00 41 00") == h("18 05 0C 00 00 00 00 00 00 00 02 00 00 00 00 00"))
        #expect(answer("19 06 06 00 40 00 40 00 40 00") == h("1A 06 02 00 03 00"))
        #expect(answer("0A 09 02 00 02 00") == h("01 09 02 00 00 00"))
        // Disconnection request for a channel that does not exist.
        #expect(answer("06 02 04 00 40 00 41 00") == h("01 02 06 00 02 00 40 00 41 00"))
        // A central's request received by a peripheral.
        #expect(answer("12 01 08 00 18 00 28 00 00 00 C8 00") == h("01 01 02 00 00 00"))
        // Responses, indications and rejects are not answered.
        #expect(answer("13 01 02 00 00 00") == nil)
        #expect(answer("01 07 02 00 00 00") == nil)
        #expect(answer("16 04 04 00 40 00 0A 00") == nil)
        #expect(answer("07 02 04 00 40 00 41 00") == nil)
        #expect(LESignallingPDU.commandNotUnderstood(identifier: 0).encoded() == h("01 00 02 00 00 00"))
    }
}

@Suite struct SMPTests {
    @Test func decodesAndRefusesPairing() throws {
        let request = h("01 03 00 01 10 07 07")
        let pdu = try SMPPDU(decoding: request)
        #expect(pdu.code == .pairingRequest)
        #expect(pdu.data == h("03 00 01 10 07 07"))
        #expect(pdu.encoded() == request)
        #expect(SMPCode.pairingRequest.description == "Pairing Request")
        #expect(SMPCode(rawValue: 0x0E).description == "Pairing Keypress Notification")
        #expect(SMPCode(rawValue: 0x42).description == "SMP code 0x42")

        #expect(SMPPDU.pairingFailed(.pairingNotSupported).encoded() == [0x05, 0x05])
        #expect(SMPPDU.responseWithoutPairingSupport(to: request)?.encoded() == [0x05, 0x05])
        #expect(SMPPDU.responseWithoutPairingSupport(to: [0x01]) == .pairingFailed(.pairingNotSupported))
        // Nothing else is answered.
        for other: [UInt8] in [[], [0x02, 0, 0, 0, 0, 0, 0], [0x05, 0x08], [0x0B, 0x01], [0x42]] {
            #expect(SMPPDU.responseWithoutPairingSupport(to: other) == nil)
        }
        #expect(throws: L2CAPDecodingError.truncated(structure: "SMP PDU", needed: 1, actual: 0)) { try SMPPDU(decoding: []) }
    }
}

@Suite struct L2CAPConnectionParameterTests {
    @Test func validParametersAndUnits() throws {
        let p = PreferredConnectionParameters(intervalMinMs: 30, intervalMaxMs: 50, latency: 0, timeoutMs: 2000)
        #expect(p.violations() == [])
        try p.validate()
        #expect(p.connectionParameters == LEConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 200))
        #expect(p.updateRequest(identifier: 1).encoded() == h("12 01 08 00 18 00 28 00 00 00 C8 00"))
        // 15 ms / 15 ms is explicitly allowed.
        #expect(PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 15, latency: 0, timeoutMs: 2000).violations() == [])
        // Latency 30 with a 30 ms interval: 930 ms × 3 < 6 s.
        #expect(PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 30, latency: 30, timeoutMs: 6000).violations() == [])
    }

    @Test func eachAppleRuleIsNamed() {
        func rules(_ lo: Double, _ hi: Double, _ latency: UInt16, _ timeout: Int) -> [ConnectionParameterRule] {
            PreferredConnectionParameters(intervalMinMs: lo, intervalMaxMs: hi, latency: latency, timeoutMs: timeout).violations().map(\.rule)
        }
        #expect(rules(7.5, 30, 0, 2000) == [.appleIntervalMinAtLeast15ms, .appleIntervalMinMultipleOf15ms])
        #expect(rules(20, 40, 0, 2000) == [.appleIntervalMinMultipleOf15ms])
        #expect(rules(30, 40, 0, 2000) == [.appleIntervalMaxAtLeastMinPlus15ms])
        #expect(rules(30, 30, 0, 2000) == [.appleIntervalMaxAtLeastMinPlus15ms])
        #expect(rules(15, 30, 31, 6000) == [.appleLatencyAtMost30])
        #expect(rules(15, 30, 0, 1000) == [.appleTimeoutBetween2And6s])
        #expect(rules(15, 30, 0, 7000) == [.appleTimeoutBetween2And6s])
        #expect(rules(30, 100, 30, 6000) == [.appleIntervalTimesLatencyAtMost2s, .appleTimeoutAboveThreeEffectiveIntervals])
        #expect(rules(30, 400, 4, 6000) == [.appleTimeoutAboveThreeEffectiveIntervals])
        #expect(rules(30, 400, 3, 6000) == [])
        #expect(rules(31, 50, 0, 2000) == [.intervalRange, .appleIntervalMinMultipleOf15ms])
        #expect(rules(30, 50, 500, 2005).contains(.latencyRange))
        #expect(rules(30, 50, 0, 2005) == [.timeoutRange])
        #expect(rules(60, 30, 0, 2000) == [.intervalRange, .appleIntervalMaxAtLeastMinPlus15ms])
        #expect(rules(.nan, 30, 0, 2000) == [.intervalRange])
    }

    @Test func errorText() {
        let p = PreferredConnectionParameters(intervalMinMs: 30, intervalMaxMs: 400, latency: 4, timeoutMs: 6000)
        #expect(throws: ConnectionParameterError.self) { try p.validate() }
        let e = p.violations().first
        #expect(e?.field == "connection.preferred.timeout_ms")
        #expect(
            e?.description
                == "connection.preferred.timeout_ms: interval max 400 ms × (latency 4 + 1) × 3 = 6000 ms against timeout 6000 ms breaks the rule \"Apple: Interval Max × (Peripheral Latency + 1) × 3 < connSupervisionTimeout\""
        )
        let e2 = PreferredConnectionParameters(intervalMinMs: 7.5, intervalMaxMs: 30, latency: 0, timeoutMs: 2000).violations().first
        #expect(e2?.description == "connection.preferred.interval_ms: interval [7.5, 30] ms breaks the rule \"Apple: Interval Min ≥ 15 ms\"")
        #expect(ConnectionParameterRule.appleLatencyAtMost30.isAppleGuideline)
        #expect(!ConnectionParameterRule.timeoutRange.isAppleGuideline)
    }
}
