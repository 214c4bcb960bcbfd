import GattBlueZ
import GattCore
import GattDBus
import Testing

/// bluetoothd's agent calls as the core's pairing prompts, one waiting per connection (a
/// call is an Int here: whatever the shell answers).
@Suite struct BlueZPairingPromptsTests {
    let device = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
    let other = "/org/bluez/hci0/dev_00_AA_01_01_00_02"

    @Test func aQuestionWaitsForTheUsersAnswer() throws {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        // The device comes up with its first question, which the core hears as a prompt.
        let asked = p.agentCall(1, .prompt(device: device, .numericComparison(123_456)), devices: &d)
        guard case .connected(let id, _)? = asked.events.first, asked.events.last == .pairing(id, .numericComparison(123_456)), asked.events.count == 2 else {
            Issue.record("\(asked.events)"); return
        }
        #expect(asked.replies.isEmpty && asked.foreign == nil)
        #expect(p.waiting == [id])
        let answer = p.answer(id, .confirm(true))
        let answered = try #require(answer)
        #expect(answered.call == 1 && answered.reply == .success([]))
        #expect(p.answer(id, .confirm(true)) == nil && p.waiting.isEmpty)
    }

    @Test func aNewerQuestionRefusesTheOlder() throws {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        _ = p.agentCall(1, .prompt(device: device, .passkeyRequest), devices: &d)
        let again = p.agentCall(2, .prompt(device: device, .numericComparison(42)), devices: &d)
        #expect(again.replies.map(\.call) == [1] && again.replies.first?.reply == .failure(BlueZAgent.rejected))
        let id = try #require(p.waiting.first)
        #expect(p.answer(id, .passkey(12))?.call == 2)
    }

    @Test func questionsAboutAnotherAdaptersDevicesAreRefused() {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        let keyboard = "/org/bluez/hci1/dev_AA_BB_CC_DD_EE_FF"
        for route in [BlueZAgent.Call.prompt(device: keyboard, .passkeyRequest), .justWorks(device: keyboard)] {
            let h = p.agentCall(1, route, devices: &d)
            #expect(h.foreign == keyboard && h.events.isEmpty)
            #expect(h.replies.map(\.call) == [1] && h.replies.first?.reply == .failure(BlueZAgent.rejected))
        }
        #expect(p.waiting.isEmpty && d.connectedCount == 0)
        // Just Works on a central of gattd's adapter is accepted without asking.
        let ours = p.agentCall(2, .justWorks(device: device), devices: &d)
        #expect(ours.foreign == nil && ours.replies.first?.reply == .success([]) && ours.events.isEmpty)
    }

    @Test func aPasskeyShownIsReportedAndAnsweredAtOnce() {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        let shown = p.agentCall(1, .show(device: device, .displayPasskey(42)), devices: &d)
        #expect(shown.replies.map(\.call) == [1] && shown.replies.first?.reply == .success([]))
        guard case .pairing(_, .displayPasskey(42))? = shown.events.last else { Issue.record("\(shown.events)"); return }
        #expect(p.waiting.isEmpty)
        #expect(p.agentCall(2, .acknowledge, devices: &d).replies.first?.reply == .success([]))
        let refused = DBusError.invalidArgs("no")
        #expect(p.agentCall(3, .refuse(refused), devices: &d).replies.first?.reply == .failure(refused))
    }

    @Test func cancelRefusesEveryPromptAndTheCoreHearsThePairingFailed() throws {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        _ = p.agentCall(1, .prompt(device: device, .passkeyRequest), devices: &d)
        _ = p.agentCall(2, .prompt(device: other, .passkeyRequest), devices: &d)
        let ids = p.waiting
        #expect(ids.count == 2)
        let cancel = p.agentCall(3, .cancel, devices: &d)
        #expect(cancel.replies.map(\.call) == [3, 1, 2])
        #expect(cancel.replies.first?.reply == .success([]) && cancel.replies.dropFirst().allSatisfy { $0.reply == .failure(BlueZAgent.rejected) })
        #expect(cancel.events == ids.map { .pairing($0, .pairingFailed(.unspecifiedReason, remote: true)) })
        #expect(p.waiting.isEmpty)
    }

    @Test func aCentralThatGoesOrABluetoothdThatGoesRefusesWhatWaits() throws {
        var d = BlueZDevices(adapter: 0)
        var p = BlueZPairingPrompts<Int>()
        _ = p.agentCall(1, .prompt(device: device, .passkeyRequest), devices: &d)
        _ = p.agentCall(2, .prompt(device: other, .passkeyRequest), devices: &d)
        let gone = d.removed(device)
        #expect(p.ended(gone) == [1])
        #expect(p.ended(gone).isEmpty)
        #expect(p.dropAll() == [2])
        #expect(p.waiting.isEmpty && p.dropAll().isEmpty)
    }
}
