import GattCore

/// The H4 host's advertising: legacy commands (`AdvertisingRotation`: the sets take turns) or
/// extended ones (`ExtendedAdvertisingSets`: every set on the air at once, one advertising
/// handle each), chosen once per reset at bring-up and never mixed (Core Spec Vol 4 Part E
/// §3.1.1: once a host used one kind since the last reset, the controller answers the other
/// with Command Disallowed).
enum HostAdvertising: Sendable {
    case legacy(AdvertisingRotation)
    case extended(ExtendedAdvertisingSets)

    /// The advertising set of the configuration's `advertising` (the primary set).
    static let primaryHandle: UInt8 = 0

    /// A batch of advertising commands is in flight.
    var isRunning: Bool {
        switch self {
        case .legacy(let r): r.driver.state != .off && r.driver.state != .on
        case .extended(let s): s.driver.isRunning
        }
    }

    /// When the legacy rotation's current turn ends (nil: no rotation).
    var deadline: Duration? {
        guard case .legacy(let r) = self else { return nil }
        return r.deadline
    }

    /// The core's intent: these sets advertised. What to report (sets refused) and the
    /// commands of the batch to run now, if any. `randomAddress`: the address a random own
    /// address stands for (extended sets carry their own).
    mutating func setDesired(_ sets: [AdvertisingSet], randomAddress: BluetoothAddress?, now: Duration) -> (events: [TransportEvent], commands: [HCICommand]?) {
        switch self {
        case .legacy(var r):
            defer { self = .legacy(r) }
            let (events, batch) = r.setDesired(sets, now: now)
            return (events, batch?.commands)
        case .extended(var s):
            defer { self = .extended(s) }
            let (events, batch) = s.setDesired(sets, randomAddress: randomAddress)
            return (events, batch?.commands)
        }
    }

    /// Time passed: the next set's turn when the legacy rotation's is up.
    mutating func tick(now: Duration) -> [HCICommand]? {
        guard case .legacy(var r) = self else { return nil }
        defer { self = .legacy(r) }
        return r.tick(now: now)?.commands
    }

    /// Whether `command` belongs to an advertising batch (its answer goes to the driver).
    func isBatchCommand(_ command: HCICommand) -> Bool {
        switch (self, command) {
        case (.legacy, .leSetAdvertisingParameters), (.legacy, .leSetAdvertisingData), (.legacy, .leSetScanResponseData):
            isRunning
        case (.legacy, .leSetAdvertisingEnable):
            true
        case (.extended, .leSetAdvertisingSetRandomAddress), (.extended, .leSetExtendedAdvertisingParameters),
            (.extended, .leSetExtendedAdvertisingData), (.extended, .leSetExtendedScanResponseData), (.extended, .leRemoveAdvertisingSet):
            isRunning
        case (.extended, .leSetExtendedAdvertisingEnable):
            true
        default:
            false
        }
    }

    /// A failure after which the batch goes on as if the command had succeeded.
    func isHarmless(_ command: HCICommand, _ status: HCIStatus) -> Bool {
        switch self {
        case .legacy: false
        case .extended: ExtendedAdvertisingDriver.isHarmless(command, status)
        }
    }

    /// The running batch ended: what to report and the next batch's commands.
    mutating func batchFinished(failure: (command: HCICommand, status: HCIStatus)?, connected: Bool) -> (events: [TransportEvent], next: [HCICommand]?) {
        switch self {
        case .legacy(var r):
            defer { self = .legacy(r) }
            let (events, next) = r.batchFinished(failure: failure, connected: connected)
            return (events, next?.commands)
        case .extended(var s):
            defer { self = .extended(s) }
            let (events, next) = s.batchFinished(failure: failure, connected: connected)
            return (events, next?.commands)
        }
    }

    /// LE (Enhanced) Connection Complete in the peripheral role, or a failed attempt. Legacy
    /// advertising ends with either (Vol 6 Part B §4.4.2), and the next set's turn may follow;
    /// an extended set ends with a connection made from it, and LE Advertising Set
    /// Terminated follows.
    mutating func connectionOpened(_ c: LEConnectionComplete) -> (events: [TransportEvent], commands: [HCICommand]?) {
        switch self {
        case .legacy(var r):
            defer { self = .legacy(r) }
            let (events, batch) = r.connectionOpened()
            return (events, batch?.commands)
        case .extended(var s):
            guard c.status == .success else { return ([], nil) }
            defer { self = .extended(s) }
            return (s.connectionOpened(connectionHandle: c.handle, advertisingHandle: c.advertisingHandle), nil)
        }
    }

    /// LE Advertising Set Terminated (Vol 4 Part E §7.7.65.18).
    mutating func setTerminated(handle: UInt8, status: HCIStatus, connectionHandle: UInt16) -> [TransportEvent] {
        switch self {
        case .legacy:
            return [.warning("LE Advertising Set Terminated for set \(handle) with legacy advertising; ignored")]
        case .extended(var s):
            defer { self = .extended(s) }
            return s.setTerminated(handle: handle, status: status, connectionHandle: connectionHandle)
        }
    }

    /// A new random address (a private address renewed): the commands to send now. Legacy:
    /// LE Set Random Address, with advertising paused around it when on (§7.8.4). Extended:
    /// each set's address, paused likewise; nothing for a set that is off (its next
    /// configuration carries the address).
    mutating func changeAddress(_ address: BluetoothAddress) -> [HCICommand] {
        switch self {
        case .legacy(var r):
            defer { self = .legacy(r) }
            let command = HCICommand.leSetRandomAddress(address)
            return r.changeAddress(command)?.commands ?? [command]
        case .extended(var s):
            defer { self = .extended(s) }
            return s.changeAddress(address)
        }
    }
}
