import FuzzSupport
import GattControlProtocol
import GattCore

/// Fuzzes the control socket's parsers (`GattControlProtocol`): a request line as a client
/// sends it, and a line from gattd as gattctl reads it.
///
/// Input: one selector byte (bit 0: request or reply/event line; the rest picks the op a
/// reply answers), then the line.
///
/// The oracle traps when the notify fast path accepts a line the general decoder reads
/// differently (or refuses), when a request that decodes does not survive its own encoding (encode,
/// decode again: the same request, the same bytes), when a refused request's error has no
/// message or echoes an id that breaks the id rules, or when a reply or event that decodes
/// does not re-encode to a line that decodes to the same message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControl(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let selector = input.byte()
    let line = input.rest()
    if selector & 1 == 0 {
        // The notify fast path: what it takes, the general decoder reads the same way.
        if let fast = ControlRequest.decodeNotify(line) {
            guard let general = try? ControlRequest.decode(line), general == fast, general.text == fast.text else {
                oracleViolation("the notify fast path reads \(fast.text), the general decoder differs")
            }
        }
        do {
            let request = try ControlRequest.decode(line)
            let encoded = Array(request.text.utf8)
            guard let again = try? ControlRequest.decode(encoded), again == request, again.text == request.text else {
                oracleViolation("request \(request.text) does not round-trip")
            }
        } catch {
            if error.error.message.isEmpty { oracleViolation("a refused request without a message: \(error.error.code)") }
            // Ids are strings of at most 64 characters (each at most 6 bytes escaped, "\u000c")
            // or Int64 integers: an echo is bounded.
            if let id = error.id, id.text.utf8.count > 64 * 6 + 2 { oracleViolation("an echoed id of \(id.text.utf8.count) bytes") }
        }
    } else {
        let ops = ["notify", "set", "get", "status", "watch", "respond", "advertise", "advertising_data", "disconnect", "capture"]
        let op = ops[Int(selector >> 1) % ops.count]
        guard let message = try? ControlMessage.decode(line, answering: op) else { return 0 }
        let text: String
        switch message {
        case .reply(let reply, let id): text = reply.json(id: id).text
        case .event(let event): text = event.text
        case .unknownEvent: return 0
        }
        guard let again = try? ControlMessage.decode(Array(text.utf8), answering: op), again == message else {
            oracleViolation("\(text) does not decode back to the message it was encoded from")
        }
    }
    return 0
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzControlMain {
    static func main() { runLibFuzzer(fuzzControl) }
}
