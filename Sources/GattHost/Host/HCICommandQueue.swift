import DequeModule
import GattCore

/// HCI command flow control (Core Spec Vol 4 Part E §4.4): commands wait here until the
/// controller has a command credit and nothing is outstanding; the outstanding one has a
/// deadline. Sans-I/O: the host asks for the next command to send and reports answers.
struct HCICommandQueue: Sendable {
    private var queue: Deque<HCICommand> = []
    /// The command sent and not answered yet, and when it times out.
    private(set) var outstanding: (command: HCICommand, deadline: Duration)?
    private var credits = 1
    let timeout: Duration
    /// Commands that timed out in a row (an answer ends the row; a reset does not): two
    /// mean the controller stopped answering.
    private(set) var consecutiveTimeouts = 0

    init(timeout: Duration) { self.timeout = timeout }

    var isEmpty: Bool { queue.isEmpty && outstanding == nil }
    var deadline: Duration? { outstanding?.deadline }

    mutating func append(_ command: HCICommand) { queue.append(command) }
    mutating func append(contentsOf commands: [HCICommand]) { queue.append(contentsOf: commands) }
    mutating func prepend(_ command: HCICommand) { queue.prepend(command) }
    func contains(_ command: HCICommand) -> Bool { queue.contains(command) || outstanding?.command == command }

    var containsAdvertisingCommand: Bool { queue.contains { $0.isAdvertisingCommand } }
    mutating func removeAdvertisingCommands() { queue.removeAll { $0.isAdvertisingCommand } }

    /// Forgets everything (bring-up, fatal error); one credit, as after a reset.
    mutating func reset(with commands: [HCICommand] = []) {
        queue = Deque(commands)
        outstanding = nil
        credits = 1
    }

    /// The next command to send, if the controller can take one now.
    mutating func next(now: Duration) -> HCICommand? {
        guard outstanding == nil, credits > 0, let next = queue.popFirst() else { return nil }
        outstanding = (next, now + timeout)
        return next
    }

    /// A Command Complete or Command Status: the credits it grants, and the outstanding
    /// command it answers (nil for a NOP or a stray answer).
    mutating func answered(opcode: HCIOpcode, credits: UInt8) -> HCICommand? {
        self.credits = Int(credits)
        guard let o = outstanding, o.command.opcode == opcode else { return nil }
        outstanding = nil
        consecutiveTimeouts = 0
        return o.command
    }

    /// The outstanding command whose deadline passed, taken off so the queue goes on
    /// with one credit (what the Linux kernel does after a command timeout).
    mutating func expire(now: Duration) -> HCICommand? {
        guard let o = outstanding, now >= o.deadline else { return nil }
        outstanding = nil
        credits = 1
        consecutiveTimeouts += 1
        return o.command
    }
}

extension HCICommand {
    /// The commands of an `AdvertisingDriver` or `ExtendedAdvertisingDriver` batch.
    var isAdvertisingCommand: Bool {
        switch self {
        case .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable,
            .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
            .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leRemoveAdvertisingSet:
            true
        default: false
        }
    }

    /// LE Set Advertising Enable or LE Set Extended Advertising Enable: the last command of a batch.
    var isAdvertisingEnable: Bool { opcode == .leSetAdvertisingEnable || opcode == .leSetExtendedAdvertisingEnable }

    /// Commands whose failure or silence costs nothing but the feature: the host logs it
    /// and goes on (per-connection tuning, default settings, replies to the controller).
    var isOptional: Bool {
        switch self {
        case .leSetDataLength, .leSetPHY, .leSetDefaultPHY, .leWriteSuggestedDefaultDataLength, .leConnectionUpdate,
            .leReadNumberOfSupportedAdvertisingSets, .leReadMaximumAdvertisingDataLength,
            .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply, .leRemoteConnectionParameterRequestNegativeReply,
            .disconnect:
            return true
        default:
            return false
        }
    }
}
