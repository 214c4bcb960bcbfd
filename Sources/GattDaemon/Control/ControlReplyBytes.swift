import GattControlProtocol
import GattCore
import NIOCore

extension ByteBuffer {
    /// Writes a reply line (with its newline) as `ControlReply.text(id:)` spells it. The
    /// replies of the hot path, `{"ok":true}` and a notify's `{"ok":true,"sent":N}`, are
    /// written from bytes (no JSON tree, no intermediate string); the rest through `text`.
    mutating func writeControlReplyLine(_ reply: ControlReply, id: JSONText?) {
        switch reply {
        case .success:
            writeStaticString(#"{"ok":true"#)
        case .sent(let n):
            writeStaticString(#"{"ok":true,"sent":"#)
            writeDecimal(n)
        default:
            writeString(reply.text(id: id))
            writeInteger(UInt8(0x0A))
            return
        }
        switch id {
        case nil:
            break
        case .rawNumber(let n)?:
            writeStaticString(#","id":"#)
            writeString(n)
        case let id?:
            writeStaticString(#","id":"#)
            writeString(id.text)
        }
        writeStaticString("}\n")
    }

    /// `n` in decimal (as `String(n)`), without a string in between.
    mutating func writeDecimal(_ n: Int) {
        guard n != 0 else { writeInteger(UInt8(ascii: "0")); return }
        if n < 0 { writeInteger(UInt8(ascii: "-")) }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var m = n.magnitude
        withUnsafeMutableBytes(of: &digits) { d in
            while m > 0 {
                d[19 - count] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                count += 1
            }
            writeBytes(UnsafeRawBufferPointer(rebasing: d[(20 - count)...]))
        }
    }
}
