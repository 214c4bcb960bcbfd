/// The H4 host's advertising: legacy commands (`AdvertisingDriver`) or extended ones
/// (`ExtendedAdvertisingDriver`, set 0), chosen once per reset at bring-up and never mixed
/// (Core Spec Vol 4 Part E §3.1.1: once a host used one kind since the last reset, the
/// controller answers the other with Command Disallowed).
enum HostAdvertising: Sendable {
    case legacy(AdvertisingDriver)
    case extended(ExtendedAdvertisingDriver)

    /// The advertising set of the configuration's `advertising` (the primary set).
    static let primaryHandle: UInt8 = 0

    /// A batch of advertising commands is in flight.
    var isRunning: Bool {
        switch self {
        case .legacy(let d): d.state != .off && d.state != .on
        case .extended(let d): d.isRunning
        }
    }

    /// Whether the primary set advertises (or is being made to).
    var isOn: Bool {
        switch self {
        case .legacy(let d): d.state == .on
        case .extended(let d): d.state(of: Self.primaryHandle) == .on
        }
    }

    /// The core's intent: the commands of the batch to run now, if any. `randomAddress`:
    /// the address a random own address stands for (extended sets carry their own).
    mutating func setDesired(_ payloads: AdvertisingPayloads?, randomAddress: BluetoothAddress?) -> [HCICommand]? {
        switch self {
        case .legacy(var d):
            defer { self = .legacy(d) }
            return d.setDesired(payloads)?.commands
        case .extended(var d):
            defer { self = .extended(d) }
            let c = payloads.map { ExtendedAdvertisingDriver.Configuration(payloads: $0, randomAddress: randomAddress) }
            return d.setDesired(c, handle: Self.primaryHandle)?.commands
        }
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
        case .legacy(var d):
            defer { self = .legacy(d) }
            let (events, next) = d.batchFinished(failure: failure, connected: connected)
            return (events, next?.commands)
        case .extended(var d):
            defer { self = .extended(d) }
            let (events, next) = d.batchFinished(failure: failure, connected: connected)
            return (events, next?.commands)
        }
    }

    /// LE (Enhanced) Connection Complete in the peripheral role, or a failed attempt. Legacy
    /// advertising ends with either (Vol 6 Part B §4.4.2); an extended set ends with a
    /// connection made from it, and LE Advertising Set Terminated follows.
    mutating func connectionOpened(_ c: LEConnectionComplete) -> [TransportEvent] {
        switch self {
        case .legacy(var d):
            defer { self = .legacy(d) }
            return d.connectionOpened()
        case .extended(var d):
            guard c.status == .success else { return [] }
            defer { self = .extended(d) }
            return d.connectionOpened(connectionHandle: c.handle, advertisingHandle: c.advertisingHandle)
        }
    }

    /// LE Advertising Set Terminated (Vol 4 Part E §7.7.65.18).
    mutating func setTerminated(handle: UInt8, status: HCIStatus, connectionHandle: UInt16) -> [TransportEvent] {
        switch self {
        case .legacy:
            return [.warning("LE Advertising Set Terminated for set \(handle) with legacy advertising; ignored")]
        case .extended(var d):
            defer { self = .extended(d) }
            return d.setTerminated(handle: handle, status: status, connectionHandle: connectionHandle)
        }
    }

    /// A new random address (a private address renewed): the commands to send now. Legacy:
    /// LE Set Random Address, with advertising paused around it when on (§7.8.4). Extended:
    /// the set's address, paused likewise; nothing while it is off (its next configuration
    /// carries the address).
    mutating func changeAddress(_ address: BluetoothAddress) -> [HCICommand] {
        switch self {
        case .legacy(var d):
            defer { self = .legacy(d) }
            let command = HCICommand.leSetRandomAddress(address)
            return d.changeAddress(command)?.commands ?? [command]
        case .extended(var d):
            defer { self = .extended(d) }
            return d.changeAddress(address, handle: Self.primaryHandle)?.commands ?? []
        }
    }
}
