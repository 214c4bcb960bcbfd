import GattControlProtocol
import GattCore
import NIOCore
import Testing
@testable import GattDaemon

@Suite("Control replies written from bytes")
struct ControlReplyBytesTests {
    /// The bytes written are exactly the reply's text and a newline, for every id shape.
    @Test(arguments: [
        ControlReply.success, .sent(0), .sent(1), .sent(7), .sent(10), .sent(123_456_789), .sent(Int.max), .sent(-42), .sent(Int.min),
        .failure(ControlError(.busy, "full")), .value(ControlValue(hex: [1, 2])),
    ])
    func sameAsText(_ reply: ControlReply) {
        for id: JSONText? in [nil, .rawNumber("12"), .rawNumber("-9223372036854775808"), .string("a\"b"), .string("")] {
            var buffer = ByteBuffer()
            buffer.writeControlReplyLine(reply, id: id)
            #expect(buffer.readString(length: buffer.readableBytes) == reply.text(id: id) + "\n")
        }
    }
}
