import GattCore

/// Drives a controller's extended advertising (Core Spec Vol 4 Part E §7.8.52–§7.8.59)
/// towards what the peripheral core asked for, one batch of HCI commands at a time: the H4
/// host queues a batch's commands one by one and reports its end here. Advertising sets are
/// keyed by advertising handle, each named by the id of the `AdvertisingSet` it carries (the
/// events it reports name that id).
///
/// A connection ends the connectable set it came from (Vol 6 Part B §4.4.2): the controller
/// reports LE (Enhanced) Connection Complete, then LE Advertising Set Terminated naming the
/// set (Vol 4 Part E §7.7.65.18). When only one set can have taken the connection the driver
/// ends that set at once, as `AdvertisingDriver` does, and the Terminated event confirms it;
/// otherwise the Terminated event decides. A connection that arrives while a set's enabling
/// batch is in flight makes that batch's "on" stale: it counts as off, and if the set is no
/// longer wanted a disable follows to make sure.
public struct ExtendedAdvertisingDriver: Sendable {
    /// What one set's advertising is doing.
    public enum State: Sendable, Equatable {
        case off
        case on
        /// A batch is running; `enabling`: it ends with the set advertising.
        case running(enabling: Bool)
    }

    /// What a set advertises: its payloads (legacy PDUs) and its random address when they
    /// use a random own address (LE Set Advertising Set Random Address, §7.8.52).
    public struct Configuration: Sendable, Hashable {
        public var payloads: AdvertisingPayloads
        public var randomAddress: BluetoothAddress?
        public init(payloads: AdvertisingPayloads, randomAddress: BluetoothAddress?) {
            self.payloads = payloads
            // A public own address leaves the set's random address unused.
            self.randomAddress = payloads.parameters.ownAddressType.rawValue & 0x01 != 0 ? randomAddress : nil
        }
    }

    /// HCI commands to send in order for set `handle`; the batch enables it when `enabling`.
    public struct Batch: Sendable, Equatable {
        public var handle: UInt8
        public var commands: [HCICommand]
        public var enabling: Bool
        /// The set pauses around a new random address: on before, on after, nothing to report.
        var addressChange = false
    }

    /// What the controller holds for a set.
    enum Contents: Sendable, Equatable {
        /// No such set (after a reset or a removal).
        case absent
        case configured(Configuration)
        /// A configuration batch failed part-way: the set may exist with anything in it.
        case unknown
    }

    struct SetState: Sendable {
        /// The `AdvertisingSet.id` the handle carries (its events name it).
        var id = GattCore.AdvertisingSet.primaryID
        var state: State = .off
        /// What the core asked for: this configuration advertised, or nothing.
        var desired: Configuration?
        var contents: Contents = .absent
        /// A connection came while an enabling batch ran.
        var interrupted = false
        /// The connection that ended the set before its Advertising Set Terminated came.
        var endedBy: UInt16?
    }

    private(set) var sets: [UInt8: SetState] = [:]
    /// The batch in flight (its set is `.running`).
    private var running: Batch?

    public init() {}

    public func state(of handle: UInt8 = 0) -> State { sets[handle]?.state ?? .off }
    public func desired(of handle: UInt8 = 0) -> Configuration? { sets[handle]?.desired }
    /// The set id handle `handle` carries (nil: the handle was never used).
    public func id(of handle: UInt8) -> String? { sets[handle]?.id }
    /// The handles in use, with the set id each carries.
    public var handles: [UInt8: String] { sets.mapValues(\.id) }
    public var isRunning: Bool { running != nil }

    /// The core's intent for set `handle`, carrying set `id`. Returns the batch to run now
    /// (nil: nothing to do, or a batch is running and the next one follows its end).
    public mutating func setDesired(_ configuration: Configuration?, handle: UInt8 = 0, id: String = GattCore.AdvertisingSet.primaryID) -> Batch? {
        sets[handle, default: SetState()].desired = configuration
        sets[handle]?.id = id
        return nextBatch()
    }

    /// Failures that leave the set as the batch wants it, so the batch goes on as if they
    /// succeeded: removing a set the controller does not have, disabling one it does not
    /// have or that is not advertising.
    public static func isHarmless(_ command: HCICommand, _ status: HCIStatus) -> Bool {
        switch command {
        case .leRemoveAdvertisingSet: status == .unknownAdvertisingIdentifier
        case .leSetExtendedAdvertisingEnable(false, _): status == .unknownAdvertisingIdentifier || status == .commandDisallowed
        default: false
        }
    }

    /// The running batch ended; `failure`: the command that failed and its status. Returns
    /// what to report to the core and the next batch to run.
    public mutating func batchFinished(failure: (command: HCICommand, status: HCIStatus)?, connected: Bool) -> (events: [TransportEvent], next: Batch?) {
        guard let batch = running, var s = sets[batch.handle], case .running(let enabling) = s.state else { return ([], nil) }
        running = nil
        var events: [TransportEvent] = []
        if let (command, status) = failure {
            s.state = .off
            if enabling {
                // Only a failed enable leaves what the configuration commands installed known.
                if command.opcode != .leSetExtendedAdvertisingEnable { s.contents = .unknown }
                s.desired = nil
                s.interrupted = false
                sets[batch.handle] = s
                let refusedWhileConnected = connected && status == .commandDisallowed
                events.append(.advertisingRefused(whileConnected: refusedWhileConnected, reason: "\(command.name): \(status)", set: s.id))
                return (events, nextBatch())
            }
            events.append(.warning("\(command.name) failed: \(status)"))
        } else if enabling && !s.interrupted {
            s.state = .on
            if !batch.addressChange { events.append(.advertisingChanged(true, set: s.id)) }
        } else {
            // Disabled, or enabled and then ended by a connection: off either way.
            s.state = .off
            events.append(.advertisingChanged(false, set: s.id))
        }
        let makeSure = enabling && s.interrupted && s.desired == nil
        s.interrupted = false
        sets[batch.handle] = s
        if makeSure { return (events, run(Batch(handle: batch.handle, commands: [Self.disable(batch.handle)], enabling: false))) }
        return (events, nextBatch())
    }

    /// A central connected (`advertisingHandle`: the set, when the event names it — LE
    /// Enhanced Connection Complete [v2]). Ends the set it came from when that is certain.
    public mutating func connectionOpened(connectionHandle: UInt16, advertisingHandle: UInt8?) -> [TransportEvent] {
        let candidates = advertisingHandle.map { [$0] } ?? sets.keys.filter { sets[$0]?.mayHaveTakenAConnection == true }
        guard candidates.count == 1, let handle = candidates.first, sets[handle] != nil else { return [] }
        sets[handle]?.endedBy = connectionHandle
        return ended(handle)
    }

    /// LE Advertising Set Terminated (§7.7.65.18): the set stopped. Nothing new when it
    /// confirms a connection already attributed to the set.
    public mutating func setTerminated(handle: UInt8, status: HCIStatus, connectionHandle: UInt16) -> [TransportEvent] {
        guard let s = sets[handle] else { return [] }
        if status == .success, s.endedBy == connectionHandle {
            sets[handle]?.endedBy = nil
            return []
        }
        let why: [TransportEvent] = status == .success ? [] : [.warning("advertising set \(handle) ended: \(status)")]
        return why + ended(handle)
    }

    /// A new random address for set `handle` (a private address renewed). Advertising pauses
    /// around LE Set Advertising Set Random Address (refused while a connectable set
    /// advertises, §7.8.52). Nil when the set is not on: the next configuration carries it.
    public mutating func changeAddress(_ address: BluetoothAddress, handle: UInt8 = 0) -> Batch? {
        guard var s = sets[handle] else { return nil }
        if var d = s.desired, d.randomAddress != nil {
            d.randomAddress = address
            s.desired = d
        }
        sets[handle] = s
        guard running == nil, s.state == .on, case .configured(var c) = s.contents, let old = c.randomAddress, old != address else { return nil }
        c.randomAddress = address
        sets[handle]?.contents = .configured(c)
        let change = HCICommand.leSetAdvertisingSetRandomAddress(handle: handle, address: address)
        var batch = Batch(handle: handle, commands: [Self.disable(handle), change, Self.enable(handle)], enabling: true)
        batch.addressChange = true
        return run(batch)
    }

    /// The controller is new (bring-up, reset): no set exists or advertises.
    public mutating func reset() {
        self = ExtendedAdvertisingDriver()
    }

    // MARK: - Batches

    static func enable(_ handle: UInt8) -> HCICommand { .leSetExtendedAdvertisingEnable(enable: true, sets: [AdvertisingSetEnable(handle: handle)]) }
    static func disable(_ handle: UInt8) -> HCICommand { .leSetExtendedAdvertisingEnable(enable: false, sets: [AdvertisingSetEnable(handle: handle)]) }

    /// The set stopped advertising (a connection, or the controller ended it): the core decides again.
    private mutating func ended(_ handle: UInt8) -> [TransportEvent] {
        guard var s = sets[handle] else { return [] }
        s.desired = nil
        defer { sets[handle] = s }
        switch s.state {
        case .on:
            s.state = .off
            return [.advertisingChanged(false, set: s.id)]
        case .running(enabling: true):
            s.interrupted = true
            return []
        case .off, .running(enabling: false):
            return []
        }
    }

    private mutating func nextBatch() -> Batch? {
        guard running == nil else { return nil }
        for handle in sets.keys.sorted() {
            if let batch = batch(for: handle) { return run(batch) }
        }
        return nil
    }

    /// What set `handle` needs to reach its desired state, and the contents it leaves.
    private mutating func batch(for handle: UInt8) -> Batch? {
        guard let s = sets[handle] else { return nil }
        switch s.state {
        case .running:
            return nil
        case .off:
            guard let c = s.desired else { return nil }
            sets[handle]?.contents = .configured(c)
            return Batch(handle: handle, commands: Self.install(c, handle: handle, over: s.contents) + [Self.enable(handle)], enabling: true)
        case .on:
            guard let c = s.desired else { return Batch(handle: handle, commands: [Self.disable(handle)], enabling: false) }
            guard s.contents != .configured(c) else { return nil }
            sets[handle]?.contents = .configured(c)
            let commands = [Self.disable(handle)] + Self.install(c, handle: handle, over: s.contents) + [Self.enable(handle)]
            return Batch(handle: handle, commands: commands, enabling: true)
        }
    }

    /// The commands that turn a set holding `contents` into one holding `c`, while it is
    /// disabled. A set configured otherwise is removed first: LE Set Extended Advertising
    /// Parameters refuses a type that does not fit the data the set already holds (§7.8.53).
    static func install(_ c: Configuration, handle: UInt8, over contents: Contents) -> [HCICommand] {
        switch contents {
        case .configured(let old) where old == c:
            return []
        case .configured(let old) where old.payloads == c.payloads:
            return c.randomAddress.map { [.leSetAdvertisingSetRandomAddress(handle: handle, address: $0)] } ?? []
        case .absent:
            return configuration(c, handle: handle)
        case .configured, .unknown:
            return [.leRemoveAdvertisingSet(handle: handle)] + configuration(c, handle: handle)
        }
    }

    /// Parameters, random address, advertising data and scan response data of a new set.
    static func configuration(_ c: Configuration, handle: UInt8) -> [HCICommand] {
        let parameters = ExtendedAdvertisingParameters(handle: handle, payloads: c.payloads)
        var commands: [HCICommand] = [.leSetExtendedAdvertisingParameters(parameters)]
        if let a = c.randomAddress { commands.append(.leSetAdvertisingSetRandomAddress(handle: handle, address: a)) }
        if parameters.eventProperties.carriesAdvertisingData {
            commands += HCICommand.extendedAdvertisingData(handle: handle, c.payloads.advertisingData)
        }
        if parameters.eventProperties.contains(.scannable) {
            commands += HCICommand.extendedScanResponseData(handle: handle, c.payloads.scanResponseData)
        }
        return commands
    }

    private mutating func run(_ batch: Batch) -> Batch {
        sets[batch.handle, default: SetState()].state = .running(enabling: batch.enabling)
        running = batch
        return batch
    }
}

extension ExtendedAdvertisingDriver.SetState {
    /// On (or being enabled, or being disabled) with connectable PDUs: a connection may come from it.
    var mayHaveTakenAConnection: Bool {
        guard state != .off, case .configured(let c) = contents else { return false }
        return c.payloads.parameters.advertisingType.isConnectable
    }
}
