/// What the Security Manager reports to the host and its user (Core Spec Vol 3
/// Part H §2.3.5 user interaction, §3.4 timeout, §2.4 completed key distribution).
public enum SecurityManagerEvent: Sendable, Equatable {
    /// A central asks to pair; answer `.accept` or `.reject`. Only when
    /// `SecurityManagerConfiguration.confirmPairing` is set.
    case pairingRequest(method: SMPAssociationModel, peerIOCapability: SMPIOCapability)
    /// Show this six-digit passkey (0–999999) to the user; no answer needed.
    case displayPasskey(UInt32)
    /// Show this six-digit number; answer `.confirm(true)` if the central shows the same.
    case numericComparison(UInt32)
    /// Ask the user for the passkey the central displays; answer `.passkey(n)` or `.reject`.
    case passkeyRequest
    /// Pairing ended with this reason: sent by the central (`remote`) or by us.
    case pairingFailed(SMPPairingFailedReason, remote: Bool)
    /// The 30-second SMP timer expired (§3.4): no further SMP on this link; a new
    /// pairing needs a new connection.
    case timedOut
    /// Pairing and key distribution finished; `bonded` says whether both sides
    /// asked for bonding, i.e. whether the host should store the bond.
    case pairingComplete(Bond, bonded: Bool)
}

/// The user's answer to a prompt (`pairingRequest`, `numericComparison`, `passkeyRequest`).
public enum PairingUserAnswer: Sendable, Equatable {
    /// Allow the pairing announced by `pairingRequest`.
    case accept
    /// Refuse whatever is being asked: the pairing fails.
    case reject
    /// The passkey typed by the user, 0–999999.
    case passkey(UInt32)
    /// Whether the numbers of a `numericComparison` match.
    case confirm(Bool)
}
