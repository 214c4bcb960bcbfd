import Testing
@testable import GattCore
import GattTestFixtures

@Suite struct ATTPDUTests {
    @Test func decodesRequestsExactly() throws {
        #expect(try ATTPDU(decoding: [0x02, 0x05, 0x02]) == .exchangeMTURequest(mtu: 517))
        #expect(try ATTPDU(decoding: [0x04, 0x01, 0x00, 0xFF, 0xFF]) == .findInformationRequest(start: 1, end: 0xFFFF))
        #expect(try ATTPDU(decoding: [0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0D, 0x18])
            == .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0x0D, 0x18]))
        #expect(try ATTPDU(decoding: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28])
            == .readByTypeRequest(start: 1, end: 0xFFFF, type: 0x2803))
        #expect(try ATTPDU(decoding: [0x10, 0x01, 0x00, 0xFF, 0xFF] + ATTFixture.uart.littleEndian128)
            == .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: ATTFixture.uart))
        #expect(try ATTPDU(decoding: [0x0C, 0x19, 0x00, 0x16, 0x00]) == .readBlobRequest(handle: 0x19, offset: 22))
        #expect(try ATTPDU(decoding: [0x0E, 0x03, 0x00, 0x05, 0x00]) == .readMultipleRequest(handles: [3, 5]))
        #expect(try ATTPDU(decoding: [0x16, 0x19, 0x00, 0x02, 0x00, 0xAB]) == .prepareWriteRequest(handle: 0x19, offset: 2, value: [0xAB]))
        #expect(try ATTPDU(decoding: [0x52, 0x10, 0x00]) == .writeCommand(handle: 0x10, value: []))
        let signed: [UInt8] = [0xD2, 0x12, 0x00, 0x13, 0x37, 1, 0, 0, 0, 0xF1, 0x87, 0x1E, 0x93, 0x3C, 0x90, 0x0F, 0xF2]
        #expect(try ATTPDU(decoding: signed)
            == .signedWriteCommand(handle: 0x12, value: [0x13, 0x37], signature: Array(signed[5...])))
    }

    @Test func rejectsWrongLengths() {
        let cases: [([UInt8], ATTOpcode)] = [
            ([0x02, 0x17], .exchangeMTURequest), ([0x02, 0x17, 0x00, 0x00], .exchangeMTURequest),
            ([0x04, 0x01, 0x00, 0xFF], .findInformationRequest), ([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00], .findByTypeValueRequest),
            ([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28, 0x00], .readByTypeRequest), ([0x0A, 0x01], .readRequest),
            ([0x0C, 0x01, 0x00, 0x00], .readBlobRequest), ([0x0E, 0x01, 0x00], .readMultipleRequest),
            ([0x0E, 0x01, 0x00, 0x02, 0x00, 0x03], .readMultipleRequest), ([0x12, 0x01], .writeRequest),
            ([0x16, 0x01, 0x00, 0x00], .prepareWriteRequest), ([0x18], .executeWriteRequest),
            ([0x18, 0x01, 0x00], .executeWriteRequest), ([0x1E, 0x00], .handleValueConfirmation),
            ([0xD2, 0x01, 0x00] + [UInt8](repeating: 0, count: 11), .signedWriteCommand),
            ([0x20, 0x01, 0x00], .readMultipleVariableRequest),
            ([0x09, 0x07, 0x01, 0x00], .readByTypeResponse), ([0x05, 0x03, 0x01, 0x00, 0x00, 0x28], .findInformationResponse),
            ([0x23, 0x01, 0x00, 0x01, 0x00, 0xAA], .multipleHandleValueNotification),
        ]
        for (bytes, op) in cases {
            #expect(throws: ATTPDUDecodingError.invalidLength(op), "\(bytes)") { try ATTPDU(decoding: bytes) }
        }
        #expect(throws: ATTPDUDecodingError.unknownOpcode(0x3F)) { try ATTPDU(decoding: [0x3F]) }
        #expect(throws: ATTPDUDecodingError.empty) { try ATTPDU(decoding: []) }
    }

    @Test func responsesRoundTrip() throws {
        let pdus: [ATTPDU] = [
            .error(.readRequest, 0x0003, .readNotPermitted),
            .exchangeMTUResponse(mtu: 247),
            .findInformationResponse([ATTHandleUUID(handle: 1, uuid: 0x2800), ATTHandleUUID(handle: 2, uuid: 0x2803)]),
            .findInformationResponse([ATTHandleUUID(handle: 0x29, uuid: ATTFixture.uartRX)]),
            .findByTypeValueResponse([ATTHandlesInformation(found: 0x0E, groupEnd: 0x26)]),
            .readByTypeResponse([ATTHandleValue(handle: 2, value: [1, 2, 3]), ATTHandleValue(handle: 4, value: [4, 5, 6])]),
            .readByGroupTypeResponse([ATTGroupData(handle: 1, groupEnd: 5, value: [0x00, 0x18])]),
            .readMultipleVariableResponse(values: [[1, 2], [], [3]]),
            .multipleHandleValueNotification([ATTHandleValue(handle: 0x12, value: [1]), ATTHandleValue(handle: 0x1D, value: [2, 3])]),
            .prepareWriteResponse(handle: 0x19, offset: 5, value: [9, 9]),
            .handleValueIndication(handle: 0x12, value: [7]), .writeResponse, .executeWriteResponse,
        ]
        for p in pdus { #expect(try ATTPDU(decoding: p.bytes) == p) }
        #expect(ATTPDU.readByTypeResponse([ATTHandleValue(handle: 2, value: [1, 2, 3])]).bytes == [0x09, 0x05, 0x02, 0x00, 1, 2, 3])
        #expect(ATTPDU.multipleHandleValueNotification([ATTHandleValue(handle: 0x12, value: [1]), ATTHandleValue(handle: 0x1D, value: [2, 3])]).bytes
            == [0x23, 0x12, 0x00, 0x01, 0x00, 0x01, 0x1D, 0x00, 0x02, 0x00, 0x02, 0x03])
    }

    /// §3.4.7.1, §3.4.7.2: opcode, handle (little-endian), value; the one encoding `bytes` and
    /// the server's `notify` share, whatever slice of a value it is given.
    @Test func handleValuePDUsEncodeOnce() {
        #expect(ATTPDU.handleValueNotification(handle: 0x0312, value: [1, 2]).bytes == [0x1B, 0x12, 0x03, 1, 2])
        #expect(ATTPDU.handleValueIndication(handle: 0x0312, value: []).bytes == [0x1D, 0x12, 0x03])
        let value: [UInt8] = [9, 8, 7, 6]
        #expect(ATTPDU.handleValue(indication: false, handle: 0x0029, value: value.prefix(3)) == [0x1B, 0x29, 0x00, 9, 8, 7])
        #expect(ATTPDU.handleValue(indication: true, handle: 0x0029, value: value[2...]) == [0x1D, 0x29, 0x00, 7, 6])
    }

    @Test func opcodeFlags() {
        #expect(ATTOpcode.writeCommand.isCommand)
        #expect(ATTOpcode.signedWriteCommand.isCommand && ATTOpcode.isSigned(0xD2))
        #expect(!ATTOpcode.writeRequest.isCommand)
        #expect(ATTOpcode.readBlobRequest.responseOpcode == .readBlobResponse)
        #expect(ATTOpcode.handleValueConfirmation.responseOpcode == nil)
    }

    /// BlueZ unit/test-crypto.c sign_att_5: a real ATT_SIGNED_WRITE_CMD (handle 0x0012,
    /// value 13 37, Sign Counter 1).
    @Test func signatureMatchesBlueZVector() {
        let key: [UInt8] = [0x50, 0x5E, 0x42, 0xDF, 0x96, 0x91, 0xEC, 0x72, 0xD3, 0x1F, 0xCD, 0xFB, 0xEB, 0x64, 0x1B, 0x61]
        #expect(ATTSigning.signature(csrk: key, message: [0xD2, 0x12, 0x00, 0x13, 0x37], signCounter: 1)
            == [0x01, 0x00, 0x00, 0x00, 0xF1, 0x87, 0x1E, 0x93, 0x3C, 0x90, 0x0F, 0xF2])
    }
}
