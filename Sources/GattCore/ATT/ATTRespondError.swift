/// Why `ATTServer.respond(to:result:now:)` refused an answer.
public enum ATTRespondError: Error, Equatable, Sendable {
    /// Never issued, already answered, timed out, or its connection is gone.
    case unknownRequest
}
