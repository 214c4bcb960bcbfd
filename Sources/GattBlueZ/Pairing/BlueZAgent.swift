import GattCore
import GattDBus

/// gattd as bluetoothd's pairing agent (`org.bluez.Agent1`, doc/org.bluez.Agent.rst):
/// bluetoothd's questions become the pairing prompts the control socket already carries
/// (`SecurityManagerEvent`), and the user's answers become the method replies. Sans-I/O: what
/// a call asks and how an answer is sent back.
public enum BlueZAgent {
    public static let path = "/org/gattd/agent"
    public static let interface = "org.bluez.Agent1"

    /// The `capability` of `RegisterAgent` for the config's IO capability.
    public static func capability(_ io: SMPIOCapability) -> String {
        switch io {
        case .displayOnly: "DisplayOnly"
        case .displayYesNo: "DisplayYesNo"
        case .keyboardOnly: "KeyboardOnly"
        case .noInputNoOutput: "NoInputNoOutput"
        case .keyboardDisplay: "KeyboardDisplay"
        }
    }

    /// What one call on the agent asks.
    public enum Call: Sendable, Equatable {
        /// A question for the user about `device`'s pairing: answer with `reply(_:to:)`.
        case prompt(device: String, SecurityManagerEvent)
        /// Something to show (`DisplayPasskey`): reported, answered at once.
        case show(device: String, SecurityManagerEvent)
        /// Answered at once with success (`Release`, `AuthorizeService`, a repeated display).
        case acknowledge
        /// Just Works on `device`, accepted without asking (no `confirm_pairing`), as gattd's
        /// other transports do: for a central of gattd's adapter only.
        case justWorks(device: String)
        /// bluetoothd gave up on the questions it asked (`Cancel`).
        case cancel
        /// Refused at once (BR/EDR PIN codes, unknown calls).
        case refuse(DBusError)
    }

    public static let rejected = DBusError("org.bluez.Error.Rejected", "gattd's user refused")

    /// A call on bluetoothd's `AgentManager1` (`RegisterAgent`, `RequestDefaultAgent`, `UnregisterAgent`).
    static func managerCall(_ member: String, _ arguments: [DBusValue]) -> DBusCall {
        DBusCall(destination: BlueZ.service, path: "/org/bluez", interface: "org.bluez.AgentManager1", member: member, arguments)
    }

    /// Routes a call; `confirmPairing` (the config's `confirm_pairing`): Just Works asks the
    /// user too, else it is accepted as on gattd's other transports.
    public static func route(member: String, arguments: [DBusValue], confirmPairing: Bool) -> Call {
        let device = arguments.first?.string ?? ""
        let number = arguments.count > 1 ? arguments[1].integer.map(UInt32.init) : nil
        switch member {
        case "RequestConfirmation":
            guard let n = number else { return .refuse(.invalidArgs("RequestConfirmation takes o, u")) }
            return .prompt(device: device, .numericComparison(n))
        case "RequestPasskey":
            return .prompt(device: device, .passkeyRequest)
        case "RequestAuthorization":
            return confirmPairing ? .prompt(device: device, .pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput)) : .justWorks(device: device)
        case "DisplayPasskey":
            guard let n = number else { return .refuse(.invalidArgs("DisplayPasskey takes o, u, q")) }
            // Called again as the central's user types (`entered`): shown once.
            let entered = arguments.count > 2 ? arguments[2].integer ?? 0 : 0
            return entered == 0 ? .show(device: device, .displayPasskey(n)) : .acknowledge
        case "Release", "AuthorizeService":
            return .acknowledge
        case "Cancel":
            return .cancel
        case "RequestPinCode", "DisplayPinCode":
            return .refuse(DBusError("org.bluez.Error.Rejected", "gattd pairs LE centrals only (no PIN codes)"))
        default:
            return .refuse(.unknownMethod("\(interface).\(member)"))
        }
    }

    /// The reply to a prompt's call for the user's answer.
    public static func reply(_ answer: PairingUserAnswer, to prompt: SecurityManagerEvent) -> Result<[DBusValue], DBusError> {
        switch (prompt, answer) {
        case (.passkeyRequest, .passkey(let n)) where n <= 999_999: .success([.uint32(n)])
        case (.numericComparison, .confirm(true)), (.pairingRequest, .accept), (.pairingRequest, .confirm(true)): .success([])
        default: .failure(rejected)
        }
    }
}
