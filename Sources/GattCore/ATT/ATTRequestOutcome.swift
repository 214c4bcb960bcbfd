/// What a request handler (`ATTReadRequests`, `ATTWriteRequests`) decided; `ATTServer`
/// carries it out on the bearer the request came on (Core Spec Vol 3 Part F §3.3.2: one
/// request at a time, each answered by one response or Error Response).
enum ATTRequestOutcome {
    /// Nothing to send (a command, or a PDU that is not answered).
    case none
    /// This PDU answers the request.
    case respond(ATTPDU)
    /// These octets answer it (a response encoded in place, sized once).
    case respondBytes([UInt8])
    /// An Error Response to `request` about `handle`.
    case error(ATTOpcode, AttributeHandle, ATTError)
    /// The request waits for one deferred access per handle (`accesses`, in order); `handle`
    /// goes in its Error Response if one fails or times out.
    case wait(PendingOperation.Kind, handle: AttributeHandle, accesses: [(AttributeHandle, DeferredAccess)])
}
