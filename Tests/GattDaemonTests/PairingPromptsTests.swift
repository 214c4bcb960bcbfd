import GattCore
import Testing

@testable import GattDaemon

/// Pending pairing prompts and the answers a control client may give to each.
@Suite struct PairingPromptsTests {
    let a = ConnectionID(0x40)

    @Test func eachPromptTakesItsOwnAnswer() {
        var p = PairingPrompts()
        #expect(p.answer(.init(accept: true), on: a) == .failure(.nothingPending))
        p.observe(.pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput), on: a)
        #expect(p.answer(.init(passkey: 1), on: a) == .failure(.wrongAnswer(expected: "\"accept\": true or false")))
        #expect(p.answer(.init(accept: true), on: a) == .success(.accept))
        #expect(p.pending.isEmpty, "answered")
        p.observe(.numericComparison(123_456), on: a)
        #expect(p.answer(.init(confirm: false), on: a) == .success(.confirm(false)))
        p.observe(.numericComparison(123_456), on: a)
        #expect(p.answer(.init(accept: true), on: a) == .success(.confirm(true)), "accept confirms a comparison")
        p.observe(.passkeyRequest, on: a)
        #expect(p.answer(.init(passkey: 1_000_000), on: a) == .failure(.wrongAnswer(expected: "a passkey of 0 to 999999")))
        #expect(p.answer(.init(confirm: true), on: a) == .failure(.wrongAnswer(expected: "\"passkey\": 0 to 999999")))
        #expect(p.answer(.init(passkey: 42), on: a) == .success(.passkey(42)))
        p.observe(.passkeyRequest, on: a)
        #expect(p.answer(.init(accept: false), on: a) == .success(.reject), "accept: false refuses any prompt")
    }

    @Test func thePairingOrTheLinkEndingEndsThePrompt() {
        var p = PairingPrompts()
        p.observe(.passkeyRequest, on: a)
        p.observe(.displayPasskey(1), on: a)
        #expect(p.pending == [a: .passkeyRequest], "a displayed passkey is no question")
        p.observe(.timedOut, on: a)
        #expect(p.pending.isEmpty)
        p.observe(.numericComparison(1), on: a)
        p.observe(.pairingFailed(.unspecifiedReason, remote: true), on: a)
        #expect(p.pending.isEmpty)
        p.observe(.passkeyRequest, on: a)
        p.closed(a)
        #expect(p.answer(.init(passkey: 1), on: a) == .failure(.nothingPending))
    }
}
