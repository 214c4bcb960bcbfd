import GattCore
import Testing

@testable import GattTransport

/// What the kernel transport sends for the `security` config, from the adapter's mgmt settings
/// (Read Controller Information). The settings values are the ones btmon showed in the kernel
/// VM (Linux 6.1, btvirt): the kernel side itself runs in scripts/kernel-vm-test.
@Suite("Kernel security plan")
struct KernelSecurityPlanTests {
    typealias Settings = KernelManagement.Settings
    /// btvirt's 5.2 BR/EDR+LE controller: supported settings 0x000dbeff.
    static let dualModeSupported = Settings(rawValue: 0x000d_beff)
    /// The same adapter after gattd's bring-up (LE on, bondable, powered): 0x000c0291.
    static let dualModeUp = Settings(rawValue: 0x000c_0291)
    /// An LE-only adapter: no BR/EDR, no Secure Simple Pairing.
    static let leOnlySupported: Settings = [.powered, .connectable, .bondable, .lowEnergy, .advertising, .secureConnections]

    static func settings(io: SMPIOCapability = .noInputNoOutput, bondable: Bool = true, only: Bool = false) -> KernelManagement.SecuritySettings {
        KernelManagement.SecuritySettings(SecurityManagerConfiguration(ioCapability: io, bondable: bondable, secureConnectionsOnly: only))
    }

    @Test func settingsBitsAreMgmtApis() {
        #expect(Self.dualModeUp == [.powered, .bondable, .basicRateEDR, .lowEnergy, Settings(rawValue: 0x000c_0000)])
        #expect(Settings.secureSimplePairing.rawValue == 1 << 6)
        #expect(Settings.basicRateEDR.rawValue == 1 << 7)
        #expect(Settings.secureConnections.rawValue == 1 << 11)
    }

    /// BR/EDR on, SSP off: the kernel rejects Set Secure Connections, so SSP goes first.
    @Test func dualModeWithSecureSimplePairingOffGetsItBeforeSecureConnections() {
        let plan = KernelSecurityPlan(Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: Self.dualModeUp)
        #expect(plan.steps == [.ioCapability(.noInputNoOutput), .secureSimplePairing, .secureConnections(only: false)])
        #expect(plan.unavailable.isEmpty)
        #expect(plan.steps.map(\.opcode.rawValue) == [0x0018, 0x000B, 0x002D])
        #expect(plan.steps.map(\.parameter) == [0x03, 0x01, 0x01])
    }

    /// Once SSP and Secure Connections are on (0x000c0ad1), SSP is left alone; Set Secure
    /// Connections is still sent, because Secure Connections Only is not among the settings.
    @Test func nothingIsSwitchedThatIsOnAlready() {
        let on = Settings(rawValue: 0x000c_0ad1)
        let plan = KernelSecurityPlan(Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: on)
        #expect(plan.steps == [.ioCapability(.noInputNoOutput), .secureConnections(only: false)])
        let only = KernelSecurityPlan(Self.settings(only: true), device: "hci0", supported: Self.dualModeSupported, current: on)
        #expect(only.steps == [.ioCapability(.noInputNoOutput), .secureConnections(only: true)])
        #expect(only.steps.last?.parameter == 0x02)
    }

    /// No BR/EDR (an LE-only controller, or BR/EDR switched off): the kernel takes Secure
    /// Connections without SSP, so SSP is never sent.
    @Test func withoutBREDRSecureSimplePairingIsNeverSent() {
        let leOnly = KernelSecurityPlan(
            Self.settings(), device: "hci0", supported: Self.leOnlySupported, current: [.powered, .bondable, .lowEnergy])
        #expect(leOnly.steps == [.ioCapability(.noInputNoOutput), .secureConnections(only: false)])
        let bredrOff = KernelSecurityPlan(
            Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: [.powered, .bondable, .lowEnergy])
        #expect(!bredrOff.steps.contains(.secureSimplePairing))
    }

    @Test func bondableIsSentOnlyWhenItDiffers() {
        let off = KernelSecurityPlan(Self.settings(bondable: false), device: "hci0", supported: Self.dualModeSupported, current: Self.dualModeUp)
        #expect(off.steps.contains(.bondable(false)))
        #expect(off.steps.first { $0.opcode == .setBondable }?.parameter == 0)
        let notBondable = Self.dualModeUp.subtracting(.bondable)
        let on = KernelSecurityPlan(Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: notBondable)
        #expect(on.steps.contains(.bondable(true)))
        let same = KernelSecurityPlan(Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: Self.dualModeUp)
        #expect(!same.steps.contains { $0.opcode == .setBondable })
    }

    /// An adapter without Secure Connections gets no command for it, and one warning that
    /// names what asked for it.
    @Test func unsupportedSecureConnectionsIsSaidNotSent() {
        let supported = Self.leOnlySupported.subtracting(.secureConnections)
        let plan = KernelSecurityPlan(Self.settings(), device: "hci0", supported: supported, current: [.powered, .bondable, .lowEnergy])
        #expect(plan.steps == [.ioCapability(.noInputNoOutput)])
        #expect(
            plan.unavailable == [
                "LE Secure Connections (gattd's default) not applied: hci0 does not support Secure Connections "
                    + "(mgmt Read Controller Information); centrals pair with LE legacy pairing"
            ])
        let only = KernelSecurityPlan(Self.settings(only: true), device: "hci0", supported: supported, current: [.powered, .lowEnergy])
        #expect(only.unavailable.first?.hasPrefix("security.secure_connections_only not applied: hci0 does not support") == true)
    }

    /// The warning names the setting as the config does (or gattd's default when the config
    /// did not ask), the command, the kernel's answer by name and code, and what follows.
    @Test func refusalsSayWhatWasAskedWhatTheKernelAnsweredAndWhatFollows() {
        let plan = KernelSecurityPlan(Self.settings(), device: "hci0", supported: Self.dualModeSupported, current: Self.dualModeUp)
        let rejected = KernelTransportError(.commandFailed(status: 0x0B), "mgmt Set Secure Connections on hci0 failed: Rejected (0x0b)")
        let sc = plan.refusal(.secureConnections(only: false), rejected)
        #expect(
            sc.warning
                == "LE Secure Connections (gattd's default) not applied: mgmt Set Secure Connections on hci0 answered Rejected (0x0b); "
                + "centrals pair with LE legacy pairing")
        #expect(!sc.skipRest)
        let ssp = plan.refusal(.secureSimplePairing, KernelTransportError(.commandFailed(status: 0x0C), ""))
        #expect(
            ssp.warning
                == "LE Secure Connections (gattd's default) not applied: with BR/EDR on, the kernel needs Secure Simple Pairing "
                + "before Secure Connections, and mgmt Set Secure Simple Pairing on hci0 answered Not Supported (0x0c); "
                + "centrals pair with LE legacy pairing")
        #expect(ssp.skipRest)  // Set Secure Connections would only be Rejected
        // Secure Connections Only refused while Secure Connections is on: legacy pairing stays possible.
        let onAlready = KernelSecurityPlan(
            Self.settings(only: true), device: "hci0", supported: Self.dualModeSupported, current: Settings(rawValue: 0x000c_0ad1))
        #expect(
            onAlready.refusal(.secureConnections(only: true), KernelTransportError(.commandFailed(status: 0x0A), "")).warning
                == "security.secure_connections_only not applied: mgmt Set Secure Connections on hci0 answered Busy (0x0a); "
                + "centrals can still pair with LE legacy pairing")
        // Not a status: the error's own text.
        let timeout = KernelTransportError(.commandTimeout, "mgmt Set Bondable on hci0: no answer within 5 seconds")
        #expect(
            plan.refusal(.bondable(true), timeout).warning
                == "security.bondable not applied: mgmt Set Bondable on hci0: no answer within 5 seconds; centrals cannot bond")
    }

    @Test func statusNamesAreMgmtApis() {
        #expect(KernelManagement.Status.describe(0x0B) == "Rejected (0x0b)")
        #expect(KernelManagement.Status.describe(0x0C) == "Not Supported (0x0c)")
        #expect(KernelManagement.Status.describe(0x14) == "Permission Denied (0x14)")
        #expect(KernelManagement.Status.describe(0x15) == "status 0x15")
    }
}
