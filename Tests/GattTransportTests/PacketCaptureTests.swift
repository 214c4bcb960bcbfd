import GattCore
import Testing

@testable import GattTransport

#if canImport(Glibc)
import Glibc
#endif

/// The kernel transport's capture: ATT PDUs framed as the HCI ACL packets that carry them.
@Suite struct PacketCaptureTests {
    /// Vol 4 Part E 5.4.2 (handle, PB flag 0b10, length) + Vol 3 Part A 3.1 (length, CID 4).
    @Test func anATTPDUIsFramedAsAnACLPacketOnTheATTChannel() {
        #expect(BtsnoopWriter.aclBody(att: [0x0A, 0x12, 0x00], handle: 0x0040)
            == [0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x12, 0x00])
        // Only the 12 handle bits are kept.
        #expect(BtsnoopWriter.aclBody(att: [], handle: 0xFEDC).prefix(4) == [0xDC, 0x2E, 0x04, 0x00])
    }

    @Test func anExclusiveCaptureNeverOverwritesAFile() throws {
        let path = "/tmp/gattd-capture-test-\(getpid())"
        defer { unlink(path) }
        let first = try BtsnoopWriter(path: path, exclusive: true)
        first.writeATT([0x0B, 0x68, 0x69], handle: 1, direction: .sent)
        first.close()
        #expect(throws: (any Error).self) { try BtsnoopWriter(path: path, exclusive: true) }
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(Int(st.st_size) == 16 + 24 + 1 + 4 + 4 + 3)  // header, record header, H4 indicator, ACL, L2CAP, PDU
    }
}
