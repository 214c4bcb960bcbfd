import GattCore
import GattHost
import Testing

@testable import GattTransport

#if canImport(Glibc)
import Glibc
#endif

/// `--btsnoop`: the file Wireshark and btmon open, read back field by field.
@Suite struct BtsnoopWriterTests {
    private func readFile(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    private func u32(_ b: [UInt8], _ at: Int) -> UInt32 { b[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
    private func i64(_ b: [UInt8], _ at: Int) -> Int64 { Int64(bitPattern: b[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) }) }

    @Test func headerAndRecordsAreBigEndianWithDirectionAndTypeFlags() throws {
        let path = "/tmp/gattd-btsnoop-test-\(getpid()).log"
        defer { unlink(path) }
        let before = BtsnoopWriter.now()
        let writer = try BtsnoopWriter(path: path)
        let reset = H4Packet(command: .reset)
        let complete = H4Packet(type: .event, body: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        let acl = H4Packet(type: .acl, body: [0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x12, 0x00])
        writer.write(reset, direction: .sent)
        writer.write(complete, direction: .received)
        writer.write(acl, direction: .received)
        writer.write(acl, direction: .sent)
        writer.close()
        writer.write(reset, direction: .sent)  // closed: not written
        let after = BtsnoopWriter.now()

        let file = readFile(path)
        #expect(Array(file[0..<8]) == Array("btsnoop".utf8) + [0])
        #expect(u32(file, 8) == 1)
        #expect(u32(file, 12) == 1002)
        var records: [(flags: UInt32, drops: UInt32, time: Int64, packet: [UInt8])] = []
        var i = 16
        while i < file.count {
            let original = Int(u32(file, i)), included = Int(u32(file, i + 4))
            #expect(original == included)
            try #require(i + 24 + included <= file.count)
            records.append((u32(file, i + 8), u32(file, i + 12), i64(file, i + 16), Array(file[(i + 24)..<(i + 24 + included)])))
            i += 24 + included
        }
        #expect(i == file.count)
        #expect(records.map(\.packet) == [reset.encoded, complete.encoded, acl.encoded, acl.encoded])
        #expect(records.map(\.packet[0]) == [0x01, 0x04, 0x02, 0x02])
        // bit 0: received; bit 1: command or event.
        #expect(records.map(\.flags) == [2, 3, 1, 0])
        #expect(records.allSatisfy { $0.drops == 0 })
        // Microseconds since 0 AD: 1970 is 0x00DCDDB30F2F8000.
        for r in records {
            #expect(r.time >= before + 0x00DC_DDB3_0F2F_8000)
            #expect(r.time <= after + 0x00DC_DDB3_0F2F_8000)
        }
        #expect(records[0].time <= records[3].time)
    }

    @Test func recordLayout() {
        let r = BtsnoopWriter.record([0x01, 0x03, 0x0C, 0x00], direction: .sent, microsecondsSince1970: 0)
        #expect(r == [0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 0, 0x00, 0xDC, 0xDD, 0xB3, 0x0F, 0x2F, 0x80, 0x00, 0x01, 0x03, 0x0C, 0x00])
    }

    @Test func anUnwritablePathFails() {
        #expect(throws: (any Error).self) { try BtsnoopWriter(path: "/nonexistent-dir/x.log") }
    }
}
