import GattCore

/// The mgmt commands that give the kernel's SMP the `security` config (BlueZ doc/mgmt-api.txt),
/// chosen from the adapter's settings (Read Controller Information) so that only what changes
/// something is sent. Pure: `KernelManagement.applySecurity` reads the settings and runs it.
///
/// Secure Connections: gattd offers LE Secure Connections by default (on the H4 host too), and
/// the kernel's SMP pairs LE with legacy pairing only unless Secure Connections is on. On an
/// adapter with BR/EDR on whose controller supports Secure Connections, Linux refuses Set Secure
/// Connections (Rejected) while Secure Simple Pairing is off (mgmt.c `set_secure_conn`): Secure
/// Connections then covers BR/EDR too, which needs SSP. So SSP is switched on first in exactly
/// that case, as bluetoothd does for every BR/EDR adapter (src/adapter.c), and never otherwise.
/// SSP off is a legacy state the Core Specification forbids a host to set (Vol 4 Part E §7.3.59).
struct KernelSecurityPlan: Sendable, Equatable {
    enum Step: Sendable, Equatable {
        /// Set IO Capability (0x0018): not among the settings, so always sent.
        case ioCapability(SMPIOCapability)
        /// Set Bondable (0x0009), when the Bondable setting differs.
        case bondable(Bool)
        /// Set Secure Simple Pairing (0x000B) on, which Set Secure Connections needs here.
        case secureSimplePairing
        /// Set Secure Connections (0x002D): 1, or 2 for Secure Connections Only. Sent even when
        /// the setting is on: the settings do not show Secure Connections Only, and the kernel
        /// answers without touching the controller when nothing changes.
        case secureConnections(only: Bool)

        var opcode: KernelManagement.Opcode {
            switch self {
            case .ioCapability: .setIOCapability
            case .bondable: .setBondable
            case .secureSimplePairing: .setSecureSimplePairing
            case .secureConnections: .setSecureConnections
            }
        }

        var parameter: UInt8 {
            switch self {
            case .ioCapability(let io): io.rawValue
            case .bondable(let on): on ? 1 : 0
            case .secureSimplePairing: 1
            case .secureConnections(let only): only ? 2 : 1
            }
        }
    }

    let settings: KernelManagement.SecuritySettings
    let device: String
    /// The commands to send, in order.
    let steps: [Step]
    /// Whether Secure Connections was on before (the consequence of a refusal depends on it).
    let secureConnectionsWasOn: Bool
    /// What the adapter cannot do at all, known before any command: one warning each.
    let unavailable: [String]

    init(_ s: KernelManagement.SecuritySettings, device: String, supported: KernelManagement.Settings, current: KernelManagement.Settings) {
        settings = s
        self.device = device
        secureConnectionsWasOn = current.contains(.secureConnections)
        var steps: [Step] = [.ioCapability(s.ioCapability)]
        var unavailable: [String] = []
        if current.contains(.bondable) != s.bondable { steps.append(.bondable(s.bondable)) }
        if supported.contains(.secureConnections) {
            if !current.contains(.secureConnections), current.contains(.basicRateEDR), !current.contains(.secureSimplePairing),
                supported.contains(.secureSimplePairing)
            {
                steps.append(.secureSimplePairing)
            }
            steps.append(.secureConnections(only: s.secureConnectionsOnly))
        } else {
            unavailable.append(
                "\(Self.secureConnectionsSetting(s)) not applied: \(device) does not support Secure Connections "
                    + "(mgmt Read Controller Information); \(Self.legacyConsequence(wasOn: false))")
        }
        self.steps = steps
        self.unavailable = unavailable
    }

    /// The config setting that asks for Secure Connections, as the config names it.
    static func secureConnectionsSetting(_ s: KernelManagement.SecuritySettings) -> String {
        s.secureConnectionsOnly ? "security.secure_connections_only" : "LE Secure Connections (gattd's default)"
    }

    static func legacyConsequence(wasOn: Bool) -> String {
        wasOn ? "centrals can still pair with LE legacy pairing" : "centrals pair with LE legacy pairing"
    }

    /// The warning for `step` answered with `error`, and whether the steps after it that
    /// depend on it (Secure Connections after Secure Simple Pairing) are to be skipped.
    func refusal(_ step: Step, _ error: KernelTransportError) -> (warning: String, skipRest: Bool) {
        let answer: String
        if case .commandFailed(let status) = error.kind {
            answer = "mgmt \(step.opcode.name) on \(device) answered \(KernelManagement.Status.describe(status))"
        } else {
            answer = error.message
        }
        switch step {
        case .ioCapability:
            return ("security.io_capability not applied: \(answer); the kernel pairs with the IO capability it had", false)
        case .bondable(let on):
            return ("security.bondable not applied: \(answer); " + (on ? "centrals cannot bond" : "centrals still bond"), false)
        case .secureSimplePairing:
            return (
                "\(Self.secureConnectionsSetting(settings)) not applied: with BR/EDR on, the kernel needs Secure Simple Pairing "
                    + "before Secure Connections, and \(answer); \(Self.legacyConsequence(wasOn: secureConnectionsWasOn))",
                true
            )
        case .secureConnections:
            return ("\(Self.secureConnectionsSetting(settings)) not applied: \(answer); \(Self.legacyConsequence(wasOn: secureConnectionsWasOn))", false)
        }
    }
}
