/// The association model of a pairing, seen from the responder (Core Spec Vol 3
/// Part H §2.3.5.1, Tables 2.6–2.8). Out of Band is not supported by gattd.
public enum SMPAssociationModel: Sendable, Hashable, CustomStringConvertible {
    /// No MITM protection: TK = 0 (legacy) or Numeric Comparison without the user.
    case justWorks
    /// LE Secure Connections only: both users compare a six-digit number.
    case numericComparison
    /// We show a six-digit passkey that the central's user types.
    case passkeyDisplay
    /// Our user types the passkey (shown by the central, or typed on both sides).
    case passkeyInput

    /// Whether the resulting key is authenticated (MITM protection).
    public var isAuthenticated: Bool { self != .justWorks }

    public var description: String {
        switch self {
        case .justWorks: "Just Works"
        case .numericComparison: "Numeric Comparison"
        case .passkeyDisplay: "Passkey Entry (display)"
        case .passkeyInput: "Passkey Entry (input)"
        }
    }

    /// Table 2.8: initiator IO capability (rows) against responder IO capability (columns).
    public static func fromIOCapabilities(initiator i: SMPIOCapability, responder r: SMPIOCapability, secureConnections sc: Bool) -> Self {
        if i == .noInputNoOutput || r == .noInputNoOutput { return .justWorks }
        switch (i, r) {
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo), (.displayYesNo, .displayOnly):
            return .justWorks
        case (.displayYesNo, .displayYesNo):
            return sc ? .numericComparison : .justWorks
        case (_, .keyboardOnly):
            return .passkeyInput
        case (.keyboardOnly, _):
            return .passkeyDisplay
        case (.displayOnly, .keyboardDisplay):
            return .passkeyInput
        case (.displayYesNo, .keyboardDisplay):
            return sc ? .numericComparison : .passkeyInput
        case (.keyboardDisplay, .displayOnly):
            return .passkeyDisplay
        default:
            // (KeyboardDisplay, DisplayYesNo) and (KeyboardDisplay, KeyboardDisplay).
            return sc ? .numericComparison : .passkeyDisplay
        }
    }
}
