import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The typed SMP codec (Core Spec Vol 3 Part H §3.5–§3.6) and association
/// model selection (§2.3.5.1, Table 2.8).
@Suite struct SMPCommandTests {
    static let request = SMPPairingFeatures(
        ioCapability: .keyboardDisplay, oobDataPresent: false,
        authenticationRequirements: [.bonding, .mitm, .secureConnections, .keypress, .ct2], maximumEncryptionKeySize: 16,
        initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey], responderKeyDistribution: [.identityKey, .linkKey])

    static let samples: [(SMPCommand, [UInt8])] = [
        (.pairingRequest(request), h("01 04 00 3d 10 07 0a")),
        (.pairingResponse(SMPPairingFeatures(ioCapability: .noInputNoOutput, oobDataPresent: true, authenticationRequirements: [.bonding])),
         h("02 03 01 01 10 00 00")),
        (.pairingConfirm(Array(0..<16)), [0x03] + Array(0..<16)),
        (.pairingRandom(Array(16..<32)), [0x04] + Array(16..<32)),
        (.pairingFailed(.dhKeyCheckFailed), h("05 0b")),
        (.encryptionInformation(longTermKey: Array(repeating: 0xAB, count: 16)), [0x06] + Array(repeating: 0xAB, count: 16)),
        (.centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708), h("07 34 12 08 07 06 05 04 03 02 01")),
        (.identityInformation(irk: Array(repeating: 0x11, count: 16)), [0x08] + Array(repeating: 0x11, count: 16)),
        (.identityAddressInformation(type: .random, address: BluetoothAddress("C1:22:33:44:55:66")!), h("09 01 66 55 44 33 22 c1")),
        (.signingInformation(csrk: Array(repeating: 0x22, count: 16)), [0x0A] + Array(repeating: 0x22, count: 16)),
        (.securityRequest([.bonding, .mitm]), h("0b 05")),
        (.pairingPublicKey(SpecKeys.publicAx + SpecKeys.publicAy), [0x0C] + SpecKeys.publicAx + SpecKeys.publicAy),
        (.pairingDHKeyCheck(Array(repeating: 0x33, count: 16)), [0x0D] + Array(repeating: 0x33, count: 16)),
        (.keypressNotification(4), h("0e 04")),
    ]

    @Test func everyCommandEncodesAndDecodes() throws {
        for (command, bytes) in Self.samples {
            #expect(command.encoded() == bytes, "\(command.code)")
            #expect(try SMPCommand(decoding: bytes) == command, "\(command.code)")
            #expect(command.code.rawValue == bytes[0])
        }
        #expect(Set(Self.samples.map(\.0.code.rawValue)) == Set(1...14))
    }

    @Test func wrongLengthsAreTypedErrors() {
        for (command, bytes) in Self.samples {
            let code = command.code
            let length = bytes.count - 1
            #expect(throws: SMPDecodingError.invalidLength(code: code, expected: length, actual: length - 1)) {
                try SMPCommand(decoding: Array(bytes.dropLast()))
            }
            #expect(throws: SMPDecodingError.invalidLength(code: code, expected: length, actual: length + 1)) {
                try SMPCommand(decoding: bytes + [0])
            }
        }
        #expect(throws: SMPDecodingError.empty) { try SMPCommand(decoding: []) }
    }

    @Test func reservedCodesAndValues() {
        for code: UInt8 in [0x00, 0x0F, 0x10, 0x42, 0xFF] {
            #expect(throws: SMPDecodingError.unknownCode(code)) { try SMPCommand(decoding: [code, 1, 2]) }
        }
        #expect(SMPDecodingError.unknownCode(0x42).pairingFailedReason == .commandNotSupported)
        #expect(throws: SMPDecodingError.invalidValue(code: .pairingRequest, field: "IO Capability")) {
            try SMPCommand(decoding: h("01 05 00 01 10 00 00"))
        }
        #expect(throws: SMPDecodingError.invalidValue(code: .pairingRequest, field: "OOB data flag")) {
            try SMPCommand(decoding: h("01 03 02 01 10 00 00"))
        }
        #expect(throws: SMPDecodingError.invalidValue(code: .identityAddressInformation, field: "AddrType")) {
            try SMPCommand(decoding: h("09 02 66 55 44 33 22 c1"))
        }
        #expect(SMPDecodingError.invalidValue(code: .pairingRequest, field: "x").pairingFailedReason == .invalidParameters)
    }

    @Test func shortValuesArePaddedSoTheLengthIsAlwaysRight() throws {
        #expect(SMPCommand.pairingConfirm([1, 2]).encoded().count == 17)
        #expect(SMPCommand.pairingPublicKey(Array(repeating: 9, count: 70)).encoded().count == 65)
        #expect(try SMPCommand(decoding: SMPCommand.pairingRandom([]).encoded()) == .pairingRandom(Array(repeating: 0, count: 16)))
    }

    @Test func failedReasonNames() {
        #expect(SMPPairingFailedReason.dhKeyCheckFailed.description == "DHKey Check Failed")
        #expect(SMPPairingFailedReason.busy.description == "Busy")
        #expect(SMPPairingFailedReason(rawValue: 0x40).description == "reason 0x40")
    }

    /// Table 2.8, rows = initiator, columns = responder (DisplayOnly, DisplayYesNo,
    /// KeyboardOnly, NoInputNoOutput, KeyboardDisplay).
    @Test(arguments: [false, true]) func associationModelTable(secureConnections sc: Bool) {
        let J = SMPAssociationModel.justWorks, D = SMPAssociationModel.passkeyDisplay, I = SMPAssociationModel.passkeyInput
        let N = sc ? SMPAssociationModel.numericComparison : nil
        let table: [[SMPAssociationModel]] = [
            [J, J, I, J, I],
            [J, N ?? J, I, J, N ?? I],
            [D, D, I, J, D],
            [J, J, J, J, J],
            [D, N ?? D, I, J, N ?? D],
        ]
        let caps: [SMPIOCapability] = [.displayOnly, .displayYesNo, .keyboardOnly, .noInputNoOutput, .keyboardDisplay]
        for (i, initiator) in caps.enumerated() {
            for (r, responder) in caps.enumerated() {
                #expect(SMPAssociationModel.fromIOCapabilities(initiator: initiator, responder: responder, secureConnections: sc) == table[i][r],
                        "\(initiator) × \(responder)")
            }
        }
    }

    @Test func withoutMITMItIsJustWorks() {
        let a = SMPPairingFeatures(ioCapability: .keyboardDisplay, authenticationRequirements: [.secureConnections])
        var b = SMPPairingFeatures(ioCapability: .keyboardDisplay, authenticationRequirements: [.secureConnections])
        #expect(SMPAssociationModel.select(initiator: a, responder: b, secureConnections: true) == .justWorks)
        b.authenticationRequirements.insert(.mitm)
        #expect(SMPAssociationModel.select(initiator: a, responder: b, secureConnections: true) == .numericComparison)
        #expect(SMPAssociationModel.justWorks.isAuthenticated == false)
        #expect(SMPAssociationModel.passkeyInput.isAuthenticated)
    }
}
