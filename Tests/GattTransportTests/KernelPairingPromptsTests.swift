import GattCore
import Testing

@testable import GattTransport

/// The kernel's pairing questions without a kernel: a question about a known central goes to
/// the daemon, one about a stranger is refused, and each answer becomes the mgmt reply the
/// kernel expects (bytes: Address, Address_Type[, Passkey]).
@Suite("Kernel pairing prompts")
struct KernelPairingPromptsTests {
    static let peer = KernelBDAddress(BluetoothAddress("00:AA:01:01:00:01")!, type: .leRandom)
    static let id = ConnectionID(0x0040)
    /// The central's address as mgmt sends it: little-endian, then the type (2: LE Random).
    static let address: [UInt8] = [0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x02]

    static func answer(_ prompt: KernelPairingPrompt, _ answer: PairingUserAnswer) -> KernelPairingPrompts.Command? {
        var p = KernelPairingPrompts()
        guard case .ask(let id) = p.asked(prompt, on: Self.id), id == Self.id else { return nil }
        return p.answered(Self.id, answer)
    }

    @Test func confirmedNumericComparisonIsAUserConfirmationReply() throws {
        let accepted = try #require(Self.answer(.confirmation(Self.peer), .confirm(true)))
        #expect(accepted.opcode == .userConfirmationReply)
        #expect(accepted.parameters == Self.address)
        let viaAccept = try #require(Self.answer(.confirmation(Self.peer), .accept))
        #expect(viaAccept.opcode == .userConfirmationReply)
    }

    @Test func refusedNumericComparisonIsANegativeReply() throws {
        let c = try #require(Self.answer(.confirmation(Self.peer), .confirm(false)))
        #expect(c.opcode == .userConfirmationNegativeReply)
        #expect(c.parameters == Self.address)
        #expect(Self.answer(.confirmation(Self.peer), .passkey(123))?.opcode == .userConfirmationNegativeReply)
    }

    @Test func passkeyIsAUserPasskeyReply() throws {
        let c = try #require(Self.answer(.passkey(Self.peer), .passkey(123_456)))
        #expect(c.opcode == .userPasskeyReply)
        // 123456 = 0x0001E240, little-endian.
        #expect(c.parameters == Self.address + [0x40, 0xE2, 0x01, 0x00])
    }

    /// A passkey has six digits: more is refused, as is a rejection.
    @Test func invalidOrRejectedPasskeyIsANegativeReply() {
        #expect(Self.answer(.passkey(Self.peer), .passkey(1_000_000))?.opcode == .userPasskeyNegativeReply)
        #expect(Self.answer(.passkey(Self.peer), .reject)?.opcode == .userPasskeyNegativeReply)
    }

    /// A question about a central gattd has no connection with is refused at once.
    @Test func questionAboutAStrangerIsRefused() {
        var p = KernelPairingPrompts()
        guard case .refuse(let c) = p.asked(.passkey(Self.peer), on: nil) else {
            Issue.record("asked about a stranger")
            return
        }
        #expect(c.opcode == .userPasskeyNegativeReply)
        #expect(c.parameters == Self.address)
        #expect(p.pending.isEmpty)
    }

    /// One answer per question: a second, or one after the pairing ended, is ignored.
    @Test func answerIsTakenOnceAndNotAfterThePairingEnded() {
        var p = KernelPairingPrompts()
        _ = p.asked(.confirmation(Self.peer), on: Self.id)
        let first = p.answered(Self.id, .confirm(true))
        let second = p.answered(Self.id, .confirm(true))
        #expect(first != nil)
        #expect(second == nil)
        _ = p.asked(.confirmation(Self.peer), on: Self.id)
        p.ended(Self.id)
        let afterEnd = p.answered(Self.id, .confirm(true))
        #expect(afterEnd == nil)
        _ = p.asked(.confirmation(Self.peer), on: Self.id)
        p.removeAll()
        let afterAdapterWent = p.answered(Self.id, .accept)
        #expect(afterAdapterWent == nil)
    }
}
