import GattCore

/// "Passkey Entry (display)" → "passkey_entry_display".
func snakeCase(_ text: String) -> String {
    var out = ""
    for ch in text.lowercased() {
        if ch.isLetter || ch.isNumber {
            out.append(ch)
        } else if !out.isEmpty, !out.hasSuffix("_") {
            out.append("_")
        }
    }
    while out.hasSuffix("_") { out.removeLast() }
    return out
}

extension SMPAssociationModel {
    /// e.g. "just_works", "numeric_comparison", "passkey_entry_display".
    public var controlName: String { snakeCase("\(self)") }
}

extension SMPIOCapability {
    /// The config's names (`security.io_capability`).
    public var controlName: String {
        switch self {
        case .displayOnly: "display_only"
        case .displayYesNo: "display_yes_no"
        case .keyboardOnly: "keyboard_only"
        case .noInputNoOutput: "no_input_no_output"
        case .keyboardDisplay: "keyboard_display"
        }
    }
}
