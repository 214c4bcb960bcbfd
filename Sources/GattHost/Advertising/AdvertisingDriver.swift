import GattCore

/// Drives a controller's legacy advertising (Core Spec Vol 4 Part E §7.8.5–§7.8.9) towards
/// what the peripheral core asked for, one batch of HCI commands at a time: the H4 host
/// queues a batch's commands one by one and reports the batch's end here. (The kernel
/// transport never sends advertising commands: `KernelAdvertisingDriver`.)
///
/// A connection ends legacy advertising (Vol 6 Part B §4.4.2). One that arrives while an
/// enabling batch is in flight makes that batch's "on" unknowable, so it counts as off
/// and, if advertising is no longer wanted, a disable follows to make sure.
public struct AdvertisingDriver: Sendable {
    /// What the controller's advertising is doing.
    public enum State: Sendable, Equatable {
        case off
        case on
        /// A batch is running; `enabling`: it ends with advertising on.
        case running(enabling: Bool)
    }

    /// HCI commands to send in order; the batch enables advertising when `enabling`.
    public struct Batch: Sendable, Equatable {
        public var commands: [HCICommand]
        public var enabling: Bool
        let payloads: AdvertisingPayloads?
        /// Advertising pauses around a new random address: on before, on after, nothing to report.
        var addressChange = false
    }

    public private(set) var state: State = .off
    /// What the core asked for: these payloads advertised, or nothing.
    public private(set) var desired: AdvertisingPayloads?
    /// What the controller was configured with last (nil: unknown).
    private var configured: AdvertisingPayloads?
    /// A connection came while an enabling batch ran.
    private var interrupted = false
    /// The batch in flight (what `.running` runs).
    private var running = Batch(commands: [], enabling: false, payloads: nil)

    public init() {}

    /// The core's intent. Returns the batch to run now (nil: nothing to do, or a batch
    /// is running and the next one follows its end).
    public mutating func setDesired(_ payloads: AdvertisingPayloads?) -> Batch? {
        desired = payloads
        return nextBatch()
    }

    /// A batch ended; `failure`: the command that failed and its status. Returns what to
    /// report to the core and the next batch to run.
    public mutating func batchFinished(failure: (command: HCICommand, status: HCIStatus)?, connected: Bool) -> (events: [TransportEvent], next: Batch?) {
        guard case .running(let enabling) = state else { return ([], nil) }
        var events: [TransportEvent] = []
        if let (command, status) = failure {
            if command == AdvertisingPayloads.disableCommand, status == .commandDisallowed {
                state = .off  // it was not advertising: what a disable wanted
            } else if enabling {
                state = .off
                // Only a failed enable leaves the configuration commands' effect known.
                if command != AdvertisingPayloads.enableCommand { configured = nil }
                desired = nil
                interrupted = false
                let refusedWhileConnected = connected && status == .commandDisallowed
                events.append(.advertisingRefused(whileConnected: refusedWhileConnected, reason: "\(command.name): \(status)"))
                return (events, nil)
            } else {
                state = .off
                events.append(.warning("\(command.name) failed: \(status)"))
            }
        } else if enabling && !interrupted {
            state = .on
            if !running.addressChange { events.append(.advertisingChanged(true)) }
        } else {
            // Disabled, or enabled and then ended by a connection: off either way.
            state = .off
            events.append(.advertisingChanged(false))
        }
        if enabling && interrupted && desired == nil {
            interrupted = false
            return (events, run(Batch(commands: [AdvertisingPayloads.disableCommand], enabling: false, payloads: nil)))
        }
        interrupted = false
        return (events, nextBatch())
    }

    /// A central connected: the controller stopped advertising. The core decides again.
    public mutating func connectionOpened() -> [TransportEvent] {
        desired = nil
        switch state {
        case .on:
            state = .off
            return [.advertisingChanged(false)]
        case .running(enabling: true):
            interrupted = true
            return []
        case .off, .running(enabling: false):
            return []
        }
    }

    /// A new random address (a private address renewed) while advertising: the controller
    /// refuses LE Set Random Address while advertising (Vol 4 Part E §7.8.4), so the batch
    /// pauses it. Nil when advertising is off (send `command` alone) or a batch is running.
    public mutating func changeAddress(_ command: HCICommand) -> Batch? {
        guard state == .on, let p = configured else { return nil }
        var batch = Batch(commands: [AdvertisingPayloads.disableCommand, command, AdvertisingPayloads.enableCommand], enabling: true, payloads: p)
        batch.addressChange = true
        return run(batch)
    }

    /// The controller is new (bring-up, reset): nothing is configured or advertising.
    public mutating func reset() {
        self = AdvertisingDriver()
    }

    private mutating func nextBatch() -> Batch? {
        switch state {
        case .running:
            return nil
        case .off:
            guard let p = desired else { return nil }
            let configure = p == configured ? [] : p.configurationCommands
            return run(Batch(commands: configure + [AdvertisingPayloads.enableCommand], enabling: true, payloads: p))
        case .on:
            guard let p = desired else {
                return run(Batch(commands: [AdvertisingPayloads.disableCommand], enabling: false, payloads: nil))
            }
            guard p != configured else { return nil }
            let commands = [AdvertisingPayloads.disableCommand] + p.configurationCommands + [AdvertisingPayloads.enableCommand]
            return run(Batch(commands: commands, enabling: true, payloads: p))
        }
    }

    private mutating func run(_ batch: Batch) -> Batch {
        state = .running(enabling: batch.enabling)
        running = batch
        if let p = batch.payloads { configured = p }
        return batch
    }
}
