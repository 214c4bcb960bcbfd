import GattBlueZ
import GattCore
import GattDBus
import Testing

/// bluetoothd's agent calls as the core's pairing prompts, and the user's answers as replies.
@Suite struct BlueZAgentTests {
    let device = "/org/bluez/hci0/dev_00_AA_01_01_00_01"

    @Test func capabilitiesAreBlueZsNames() {
        #expect(BlueZAgent.capability(.noInputNoOutput) == "NoInputNoOutput")
        #expect(BlueZAgent.capability(.keyboardDisplay) == "KeyboardDisplay")
        #expect(BlueZAgent.capability(.displayYesNo) == "DisplayYesNo")
    }

    @Test func questionsBecomePrompts() {
        #expect(BlueZAgent.route(member: "RequestConfirmation", arguments: [.objectPath(device), .uint32(123_456)], confirmPairing: false)
            == .prompt(device: device, .numericComparison(123_456)))
        #expect(BlueZAgent.route(member: "RequestPasskey", arguments: [.objectPath(device)], confirmPairing: false) == .prompt(device: device, .passkeyRequest))
        #expect(BlueZAgent.route(member: "DisplayPasskey", arguments: [.objectPath(device), .uint32(42), .uint16(0)], confirmPairing: false)
            == .show(device: device, .displayPasskey(42)))
        // Shown once, not again for each digit the central's user types.
        #expect(BlueZAgent.route(member: "DisplayPasskey", arguments: [.objectPath(device), .uint32(42), .uint16(3)], confirmPairing: false) == .acknowledge)
        // Just Works asks the user only with confirm_pairing.
        #expect(BlueZAgent.route(member: "RequestAuthorization", arguments: [.objectPath(device)], confirmPairing: false) == .justWorks(device: device))
        #expect(BlueZAgent.route(member: "RequestAuthorization", arguments: [.objectPath(device)], confirmPairing: true)
            == .prompt(device: device, .pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput)))
        #expect(BlueZAgent.route(member: "Cancel", arguments: [], confirmPairing: false) == .cancel)
        #expect(BlueZAgent.route(member: "Release", arguments: [], confirmPairing: false) == .acknowledge)
        guard case .refuse = BlueZAgent.route(member: "RequestPinCode", arguments: [.objectPath(device)], confirmPairing: false) else { Issue.record("PIN"); return }
        guard case .refuse = BlueZAgent.route(member: "RequestConfirmation", arguments: [.objectPath(device)], confirmPairing: false) else { Issue.record("no number"); return }
    }

    @Test func answersBecomeReplies() {
        #expect(BlueZAgent.reply(.passkey(123_456), to: .passkeyRequest) == .success([.uint32(123_456)]))
        #expect(BlueZAgent.reply(.passkey(1_000_000), to: .passkeyRequest) == .failure(BlueZAgent.rejected))
        #expect(BlueZAgent.reply(.confirm(true), to: .numericComparison(1)) == .success([]))
        #expect(BlueZAgent.reply(.confirm(false), to: .numericComparison(1)) == .failure(BlueZAgent.rejected))
        #expect(BlueZAgent.reply(.accept, to: .pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput)) == .success([]))
        #expect(BlueZAgent.reply(.reject, to: .pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput)) == .failure(BlueZAgent.rejected))
        #expect(BlueZAgent.reply(.accept, to: .passkeyRequest) == .failure(BlueZAgent.rejected))
    }
}
