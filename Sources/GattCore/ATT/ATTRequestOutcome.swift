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
    /// An Error Response with handle 0x0000 to a PDU that is not performed (`opcode` as it came).
    case rejected(opcode: UInt8, ATTError)
    /// The request waits for one deferred access per handle (`accesses`, in order); `handle`
    /// goes in its Error Response if one fails or times out.
    case wait(PendingOperation.Kind, handle: AttributeHandle, accesses: [(AttributeHandle, DeferredAccess)])

    /// A PDU from a client as the server takes it (`bytes`, on a bearer of ATT_MTU `mtu`):
    /// decoded, or nil with what its bytes get instead. Longer than ATT_MTU, or with a
    /// length its definition does not allow: Invalid PDU for a request, nothing for a command;
    /// an unknown request opcode, or a server-only PDU (a response, notification or indication)
    /// of a wrong length: Request Not Supported; an unknown command: nothing.
    static func decode(_ bytes: [UInt8], mtu: Int) -> (pdu: ATTPDU?, rejection: ATTRequestOutcome) {
        guard let first = bytes.first else { return (nil, .none) }
        let isCommand = ATTOpcode.isCommand(first)
        if bytes.count > mtu { return (nil, isCommand ? .none : .rejected(opcode: first, .invalidPDU)) }
        do {
            return (try ATTPDU(decoding: bytes), .none)
        } catch {
            switch error {
            case .empty: return (nil, .none)
            case .unknownOpcode: return (nil, isCommand ? .none : .rejected(opcode: first, .requestNotSupported))
            case .invalidLength(let op):
                if op.isClientRequest { return (nil, .rejected(opcode: first, .invalidPDU)) }
                return (nil, !isCommand && op != .handleValueConfirmation ? .rejected(opcode: first, .requestNotSupported) : .none)
            }
        }
    }
}
