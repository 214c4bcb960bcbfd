import GattCore

/// Why bytes from the controller could not be decoded as an HCI packet. The host
/// logs it and drops the packet; nothing here is fatal by itself.
public enum HCIDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than the packet header needs.
    case truncatedHeader(packet: String, needed: Int, actual: Int)
    /// The header's length field disagrees with the bytes that follow it.
    case lengthMismatch(packet: String, declared: Int, actual: Int)
    /// A known event or return-parameter structure with the wrong parameter length.
    case invalidParameterLength(structure: String, expected: Int, actual: Int)
    /// Return parameters asked for as one command's, but the event answers another.
    case unexpectedOpcode(expected: HCIOpcode, actual: HCIOpcode)
    /// The command completed with a non-success status.
    case commandFailed(HCIOpcode, HCIStatus)

    public var description: String {
        switch self {
        case .truncatedHeader(let p, let needed, let actual):
            "\(p): \(actual) bytes, shorter than its \(needed)-byte header"
        case .lengthMismatch(let p, let declared, let actual):
            "\(p): header declares \(declared) parameter bytes but \(actual) follow"
        case .invalidParameterLength(let s, let expected, let actual):
            "\(s): expected \(expected) parameter bytes, got \(actual)"
        case .unexpectedOpcode(let expected, let actual):
            "expected return parameters of \(expected), got \(actual)"
        case .commandFailed(let op, let status):
            "\(op) failed: \(status)"
        }
    }
}
