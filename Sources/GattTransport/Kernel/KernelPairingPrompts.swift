import GattCore

/// A pairing question the kernel asked about one central, waiting for the daemon's answer.
enum KernelPairingPrompt: Sendable, Equatable {
    /// User Confirmation Request with Confirm_Hint 0: numeric comparison.
    case confirmation(KernelBDAddress)
    /// User Passkey Request.
    case passkey(KernelBDAddress)
}

/// The kernel's pairing questions waiting for the daemon's answers, one per connection (sans
/// I/O): which question goes up to the daemon, and which mgmt reply each answer becomes.
struct KernelPairingPrompts: Sendable {
    /// A mgmt command for the pairing agent's socket.
    typealias Command = (opcode: KernelManagement.Opcode, parameters: [UInt8])

    private(set) var pending: [ConnectionID: KernelPairingPrompt] = [:]

    /// What to do with a question the kernel asked.
    enum Asked {
        /// Ask the daemon, for this connection.
        case ask(ConnectionID)
        /// No connection of gattd has the central: refuse at once.
        case refuse(Command)
    }

    /// The kernel asks `prompt` about the central of `connection` (nil: none gattd knows).
    mutating func asked(_ prompt: KernelPairingPrompt, on connection: ConnectionID?) -> Asked {
        guard let connection else { return .refuse(Self.negativeAnswer(to: prompt)) }
        pending[connection] = prompt
        return .ask(connection)
    }

    /// The daemon's answer as the mgmt reply (User Confirmation / Passkey (Negative) Reply);
    /// nil when no question is waiting on the connection (ignored).
    mutating func answered(_ connection: ConnectionID, _ answer: PairingUserAnswer) -> Command? {
        guard let prompt = pending.removeValue(forKey: connection) else { return nil }
        switch (prompt, answer) {
        case (.confirmation(let peer), .confirm(true)), (.confirmation(let peer), .accept):
            return (.userConfirmationReply, KernelKeyCommands.address(peer))
        case (.passkey(let peer), .passkey(let n)) where n <= 999_999:
            return (.userPasskeyReply, KernelKeyCommands.userPasskeyReply(peer, passkey: n))
        default:
            return Self.negativeAnswer(to: prompt)
        }
    }

    /// The pairing ended (completed, failed) or the link went: its question is no longer asked.
    mutating func ended(_ connection: ConnectionID) {
        pending[connection] = nil
    }

    /// The adapter went: no question is waiting.
    mutating func removeAll() {
        pending.removeAll()
    }

    static func negativeAnswer(to prompt: KernelPairingPrompt) -> Command {
        switch prompt {
        case .confirmation(let peer): (.userConfirmationNegativeReply, KernelKeyCommands.address(peer))
        case .passkey(let peer): (.userPasskeyNegativeReply, KernelKeyCommands.address(peer))
        }
    }
}
