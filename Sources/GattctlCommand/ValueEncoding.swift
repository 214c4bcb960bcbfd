#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import GattControlProtocol
import GattCore

/// How VALUE is written on the command line (or how `get` prints it).
enum ValueEncoding: String, EnumerableFlag {
    case hex, utf8, base64

    static func help(for value: ValueEncoding) -> ArgumentHelp? {
        switch value {
        case .hex: "Hex digits, optionally separated by spaces, ':' or '-'."
        case .utf8: "Text, sent as its UTF-8 bytes."
        case .base64: "Standard base64."
        }
    }

    var literal: AttributeValueLiteral.Encoding {
        switch self {
        case .hex: .hex
        case .utf8: .utf8
        case .base64: .base64
        }
    }

    /// Checks `text` locally (for a clear message before anything is sent) and returns the
    /// protocol's value, sent as written, e.g. `{"utf8": "21.5"}`.
    func value(_ text: String) throws(GattctlFailure) -> ControlValue {
        do {
            return try ControlValue(text, as: literal)
        } catch {
            let hint = self == .hex ? " (use --utf8 to send text)" : ""
            throw .usage("invalid \(rawValue) value \"\(text)\": \(error.message)\(hint)")
        }
    }
}
