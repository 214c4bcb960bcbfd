import GattCore

/// One line gattd sends a client: the reply to a request, or an event.
public enum ControlMessage: Sendable, Equatable {
    case reply(ControlReply, id: JSONText?)
    case event(ControlEvent)
    /// An event this version does not know (from a newer gattd), as sent.
    case unknownEvent(name: String, json: JSONText)

    /// Decodes one line (without the newline). A line with `"event"` is an event; anything
    /// else is a reply, read as the reply to `op` (the request it answers).
    public static func decode(_ line: [UInt8], answering op: String) throws(ControlError) -> ControlMessage {
        let o = try readObjectLine(line, what: "a reply or an event")
        try o.rejectDuplicates()
        if o.has("event") {
            do {
                return .event(try ControlEvent.decode(o))
            } catch where error.code == .unknownOp {
                guard let v = try? JSONParser.parse(line) else { throw error }
                return .unknownEvent(name: try o.string("event"), json: JSONText(v))
            }
        }
        let id = o.raw("id").map(JSONText.init)
        return .reply(try ControlReply.decode(o, op: op), id: id)
    }
}
