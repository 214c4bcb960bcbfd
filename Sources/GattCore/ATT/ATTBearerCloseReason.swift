/// Why the server asks the transport to close a bearer.
public enum ATTBearerCloseReason: Equatable, Sendable {
    /// An indication was not confirmed within the ATT transaction timeout
    /// (Core Spec Vol 3 Part F §3.3.3); no further PDUs may be sent on the bearer.
    case transactionTimeout
}
