import GattCore

/// The pairing prompts waiting for a person (a control client), per connection: what each
/// central's Security Manager asked, so that an answer can be checked against the question
/// (Core Spec Vol 3 Part H §2.3.5.1 association models). A prompt ends with the pairing
/// (failure, timeout, completion) or the connection.
struct PairingPrompts: Sendable {
    enum Kind: String, Sendable, Equatable {
        case pairingRequest = "pairing_request"
        case numericComparison = "numeric_comparison"
        case passkeyRequest = "passkey_request"
    }

    /// An answer as a control client gives it: any of the three fields.
    struct Answer: Sendable, Equatable {
        var accept: Bool?
        var passkey: UInt32?
        var confirm: Bool?
    }

    enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case nothingPending
        case wrongAnswer(expected: String)
        var description: String {
            switch self {
            case .nothingPending: "no pairing prompt is waiting for this central"
            case .wrongAnswer(let expected): "this prompt needs \(expected)"
            }
        }
    }

    private(set) var pending: [ConnectionID: Kind] = [:]
    /// Whether a control client watches, and so can answer a prompt.
    var watched = false

    /// The question a Security Manager event asks, if any.
    static func kind(of event: SecurityManagerEvent) -> Kind? {
        switch event {
        case .pairingRequest: .pairingRequest
        case .numericComparison: .numericComparison
        case .passkeyRequest: .passkeyRequest
        case .displayPasskey, .pairingFailed, .timedOut, .pairingComplete: nil
        }
    }

    /// Follows a connection's pairing: a prompt starts waiting; the end of the pairing ends it.
    mutating func observe(_ event: SecurityManagerEvent, on id: ConnectionID) {
        switch event {
        case .pairingRequest, .numericComparison, .passkeyRequest: pending[id] = Self.kind(of: event)
        case .pairingFailed, .timedOut, .pairingComplete: pending[id] = nil
        case .displayPasskey: break
        }
    }

    mutating func closed(_ id: ConnectionID) { pending[id] = nil }

    /// The Security Manager's answer for the prompt pending on `id`; the prompt is answered.
    /// `accept: false` refuses any prompt.
    mutating func answer(_ a: Answer, on id: ConnectionID) -> Result<PairingUserAnswer, Refusal> {
        guard let kind = pending[id] else { return .failure(.nothingPending) }
        let result: PairingUserAnswer
        if a.accept == false {
            result = .reject
        } else {
            switch kind {
            case .pairingRequest:
                guard a.accept == true else { return .failure(.wrongAnswer(expected: "\"accept\": true or false")) }
                result = .accept
            case .numericComparison:
                guard let same = a.confirm ?? a.accept else { return .failure(.wrongAnswer(expected: "\"confirm\": true or false")) }
                result = .confirm(same)
            case .passkeyRequest:
                guard let p = a.passkey else { return .failure(.wrongAnswer(expected: "\"passkey\": 0 to 999999")) }
                guard p <= 999_999 else { return .failure(.wrongAnswer(expected: "a passkey of 0 to 999999")) }
                result = .passkey(p)
            }
        }
        pending[id] = nil
        return .success(result)
    }
}
