import GattCore

/// Drives the kernel's advertising instances (mgmt Add/Remove Advertising, BlueZ doc/mgmt-api)
/// towards what the peripheral core asked for, one mgmt operation at a time: the kernel
/// transport's counterpart of the H4 host's `AdvertisingDriver`, with the same events towards
/// the core. Sans-I/O: the transport runs each `Operation` on its command thread and reports
/// its end here.
///
/// What the kernel does with an instance (seen in the kernel VM with Linux 6.1):
/// - A connection ends the instance's advertising (Core Spec Vol 6 Part B §4.4.2; Advertising Set
///   Terminated on extended controllers) but the kernel keeps the instance registered, and
///   enables it again by itself when that connection ends.
/// - Re-adding an existing instance replaces it and enables it at once.
/// So after a connection the instance is `paused`: the core decides again; if it still wants
/// advertising the instance is added again (on the air now, not only after the disconnection),
/// if not it is removed, so the kernel's own re-enabling cannot advertise against the core's
/// policy (`max_connections`, `advertise off`).
public struct KernelAdvertisingDriver: Sendable {
    /// Which mgmt commands register an instance.
    public enum Commands: Sendable, Equatable {
        /// Add Extended Advertising Parameters + Data (mgmt 1.19, Linux 5.10): intervals honoured.
        case extended
        /// Add Advertising (mgmt 1.9): the kernel's default interval.
        case addAdvertising
    }

    /// One mgmt step.
    public enum Operation: Sendable, Equatable {
        case add(KernelManagement.AdvertisingInstance, Commands)
        /// Remove Advertising (whatever it answers), then add: for an instance the kernel may
        /// hold already, left by an earlier gattd (`kill -9`) or kept across a power cycle and
        /// enabled again by the kernel, which it refuses to reconfigure (mgmt Failed, seen with
        /// Linux 6.1 after `hciconfig hci0 down/up` on a 5.2 controller).
        case replace(KernelManagement.AdvertisingInstance, Commands)
        case remove(instance: UInt8)
    }

    /// How an operation ended (the mgmt status when it failed).
    public enum Outcome: Sendable, Equatable {
        case done
        case failed(status: UInt8?, reason: String)
    }

    public enum State: Sendable, Equatable {
        case off
        /// On the air as this instance.
        case on(KernelManagement.AdvertisingInstance)
        /// Registered in the kernel but ended by a connection (the kernel would enable it again
        /// when that connection ends).
        case paused(KernelManagement.AdvertisingInstance)
        /// An operation runs; `connected`: a connection came meanwhile.
        case running(Operation, connected: Bool)
    }

    /// The instance number of this set (1: the primary set).
    public let instance: UInt8
    /// The advertising set this instance carries (`AdvertisingSet.id`), named in its events.
    public let setID: String
    public private(set) var commands: Commands
    public private(set) var state: State = .off
    /// What the core asked for last (nil: not advertising).
    public private(set) var desired: KernelManagement.AdvertisingInstance?
    /// The kernel may hold our instance without this driver knowing (a new adapter open).
    private var stale = true
    /// Adds of the running operation the kernel answered Failed.
    private var failures = 0

    /// Whether the instance is (or is being made) connectable: a connection may have ended it.
    public var isConnectable: Bool {
        switch state {
        case .on(let i), .paused(let i), .running(.add(let i, _), _), .running(.replace(let i, _), _): i.flags.contains(.connectable)
        case .off, .running(.remove, _): false
        }
    }

    public init(instance: UInt8 = 1, setID: String = AdvertisingSet.primaryID, commands: Commands) {
        self.instance = instance
        self.setID = setID
        self.commands = commands
    }

    /// The core's intent. Returns the operation to run now (nil: nothing to do, or one runs
    /// and the next follows its end).
    public mutating func setDesired(_ payloads: AdvertisingPayloads?) -> Operation? {
        desired = payloads.map { KernelManagement.AdvertisingInstance(instance: instance, payloads: $0) }
        return next()
    }

    /// A connection in the peripheral role ended our advertising. The core decides again;
    /// `settle()` afterwards removes a paused instance nobody asked for again.
    public mutating func connectionOpened() -> [TransportEvent] {
        desired = nil
        switch state {
        case .on(let i):
            state = .paused(i)
            return [.advertisingChanged(false, set: setID)]
        case .running(let op, _):
            switch op {
            case .add, .replace: state = .running(op, connected: true)
            case .remove: break
            }
            return []
        case .off, .paused:
            return []
        }
    }

    /// After the core had its say on a connection: a paused instance that is not wanted any
    /// more is removed, so the kernel does not enable it again at the disconnection.
    public mutating func settle() -> Operation? { next() }

    /// The running operation ended. Returns what to tell the core and the next operation.
    public mutating func finished(_ outcome: Outcome, connected: Bool) -> (events: [TransportEvent], next: Operation?) {
        guard case .running(let op, let interrupted) = state else { return ([], nil) }
        var events: [TransportEvent] = []
        if case .replace = op { stale = false }
        if case .remove = op { stale = false }
        if case .done = outcome { failures = 0 }
        switch (op, outcome) {
        case (.add(let i, _), .done), (.replace(let i, _), .done):
            if interrupted {
                // Added, then ended by the connection that came meanwhile.
                state = .paused(i)
                events.append(.advertisingChanged(false, set: setID))
            } else {
                state = .on(i)
                events.append(.advertisingChanged(true, set: setID))
            }
        case (.add(let i, let used), .failed(KernelManagement.Status.failed, _)) where failures < 2,
            (.replace(let i, let used), .failed(KernelManagement.Status.failed, _)) where failures < 2:
            // The kernel held the instance after all and could not update it (enabled by itself,
            // or its controller set gone after `hciconfig down/up`: Linux 6.1 then removes the
            // instance, mgmt Advertising Removed). A replace, then a plain add, before a refusal.
            failures += 1
            return (events, run(failures == 1 ? .replace(i, used) : .add(i, used)))
        case (.add(let i, let used), .failed(let status, let reason)), (.replace(let i, let used), .failed(let status, let reason)):
            failures = 0
            if used == .extended, status == KernelManagement.Status.invalidParameters || status == KernelManagement.Status.unknownCommand {
                // Kernels that list the extended pair but refuse it for controllers without
                // extended advertising (raspberrypi/linux#7473): Add Advertising from now on.
                commands = .addAdvertising
                state = .off
                events.append(.warning("mgmt Add Extended Advertising failed (\(reason)); using mgmt Add Advertising instead (the kernel's default advertising interval)"))
                return (events, run(.add(i, .addAdvertising)))
            }
            state = .off
            desired = nil
            events.append(.advertisingRefused(whileConnected: connected && status == KernelManagement.Status.rejected, reason: reason, set: setID))
            return (events, nil)
        case (.remove, .done):
            state = .off
            events.append(.advertisingChanged(false, set: setID))
        case (.remove, .failed(_, let reason)):
            // Invalid Parameters: the kernel no longer had it (removed on a timeout or by another
            // mgmt client). Off either way.
            state = .off
            events.append(.advertisingChanged(false, set: setID))
            events.append(.warning("mgmt Remove Advertising failed: \(reason)"))
        }
        return (events, next())
    }

    /// The adapter is new (opened, powered again): the kernel holds none of our instances.
    public mutating func reset(commands: Commands) {
        self = KernelAdvertisingDriver(instance: instance, setID: setID, commands: commands)
    }

    private mutating func next() -> Operation? {
        switch state {
        case .running:
            return nil
        case .off:
            guard let d = desired else { return nil }
            return run(stale ? .replace(d, commands) : .add(d, commands))
        case .paused:
            guard let d = desired else { return run(.remove(instance: instance)) }
            return run(.add(d, commands))
        case .on(let current):
            guard let d = desired else { return run(.remove(instance: instance)) }
            return d == current ? nil : run(.add(d, commands))
        }
    }

    private mutating func run(_ op: Operation) -> Operation {
        state = .running(op, connected: false)
        return op
    }
}

extension KernelManagement {
    /// mgmt status codes the advertising driver acts on (BlueZ doc/mgmt-api "Error Codes").
    public enum Status {
        public static let unknownCommand: UInt8 = 0x01
        public static let failed: UInt8 = 0x03
        public static let busy: UInt8 = 0x0A
        public static let rejected: UInt8 = 0x0B
        public static let notSupported: UInt8 = 0x0C
        public static let invalidParameters: UInt8 = 0x0D

        /// A status as mgmt-api.txt names it, with its code: "Rejected (0x0b)".
        public static func describe(_ status: UInt8) -> String {
            let names = [
                "Success", "Unknown Command", "Not Connected", "Failed", "Connect Failed", "Authentication Failed", "Not Paired",
                "No Resources", "Timeout", "Already Connected", "Busy", "Rejected", "Not Supported", "Invalid Parameters",
                "Disconnected", "Not Powered", "Cancelled", "Invalid Index", "RFKilled", "Already Paired", "Permission Denied",
            ]
            let hex = String(status, radix: 16)
            let code = "0x" + (hex.count < 2 ? "0" + hex : hex)
            return Int(status) < names.count ? "\(names[Int(status)]) (\(code))" : "status \(code)"
        }
    }
}
