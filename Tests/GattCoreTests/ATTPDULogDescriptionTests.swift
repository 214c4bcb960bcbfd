import Testing

@testable import GattCore
import GattTestFixtures

/// The debug log's one line per ATT PDU.
@Suite struct ATTPDULogDescriptionTests {
    private func line(_ hex: String) -> String { ATTPDU.logDescription(of: h(hex)) }

    @Test func requestsAndResponsesWithHandlesAndValues() {
        #expect(line("0a 12 00") == "Read Request handle 0x0012")
        #expect(line("0b 68 65 6c 6c 6f") == "Read Response \"hello\" (5 B)")
        #expect(line("0b 00 48") == "Read Response 0048 (2 B)")
        #expect(line("0b") == "Read Response (0 B)")
        #expect(line("12 12 00 68 69") == "Write Request handle 0x0012 \"hi\" (2 B)")
        #expect(line("13") == "Write Response")
        #expect(line("52 14 00 01") == "Write Command handle 0x0014 01 (1 B)")
        #expect(line("1b 11 00 00 48") == "Handle Value Notification handle 0x0011 0048 (2 B)")
        #expect(line("1d 03 00 01 00 ff ff") == "Handle Value Indication handle 0x0003 0100ffff (4 B)")
        #expect(line("1e") == "Handle Value Confirmation")
        #expect(line("02 05 02") == "Exchange MTU Request MTU 517")
        #expect(line("0c 12 00 16 00") == "Read Blob Request handle 0x0012 offset 22")
        #expect(line("16 12 00 00 00 61") == "Prepare Write Request handle 0x0012 offset 0 \"a\" (1 B)")
        #expect(line("18 01") == "Execute Write Request (write)")
        #expect(line("18 00") == "Execute Write Request (cancel)")
    }

    @Test func discovery() {
        #expect(line("10 01 00 ff ff 00 28") == "Read By Group Type Request handles 0x0001-0xFFFF type 2800")
        #expect(line("11 06 01 00 05 00 00 18 06 00 09 00 01 18")
            == "Read By Group Type Response 0x0001-0x0005 0018 (2 B), 0x0006-0x0009 0118 (2 B)")
        #expect(line("08 01 00 ff ff 03 28") == "Read By Type Request handles 0x0001-0xFFFF type 2803")
        #expect(line("04 08 00 09 00") == "Find Information Request handles 0x0008-0x0009")
        #expect(line("05 01 09 00 02 29") == "Find Information Response 0x0009 2902")
        #expect(line("06 01 00 ff ff 00 28 0d 18") == "Find By Type Value Request handles 0x0001-0xFFFF type 2800 value 0d18 (2 B)")
    }

    @Test func errorsAreNamed() {
        #expect(line("01 0a 12 00 02") == "Error Response to Read Request handle 0x0012: Read Not Permitted (0x02)")
        #expect(line("01 12 12 00 fc") == "Error Response to Write Request handle 0x0012: Write Request Rejected (0xfc)")
        #expect(line("01 10 01 00 0a") == "Error Response to Read By Group Type Request handle 0x0001: Attribute Not Found (0x0a)")
        #expect(line("01 12 12 00 04") == "Error Response to Write Request handle 0x0012: Invalid PDU (0x04)")
        #expect(line("01 12 12 00 80") == "Error Response to Write Request handle 0x0012: Application Error (0x80)")
    }

    @Test func longValuesAreCutAndBadPDUsShown() {
        let long = ATTPDU.logDescription(of: [0x0B] + Array(repeating: 0x61, count: 40))
        #expect(long == "Read Response \"" + String(repeating: "a", count: 32) + "…\" (40 B)")
        #expect(line("") == "empty ATT PDU")
        #expect(line("0a 12") == "malformed Read Request 0a12 (2 B)")
        #expect(line("3f 00") == "unknown ATT opcode 0x3f 3f00 (2 B)")
    }
}
