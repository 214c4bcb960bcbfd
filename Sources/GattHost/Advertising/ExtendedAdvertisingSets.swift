import GattCore

/// Every advertising set on the air together on a controller with extended advertising (Core
/// Spec Vol 4 Part E §7.8.53): one Advertising_Handle per set, the primary set's 0x00, the
/// others the next free ones, as many as LE Read Number of Supported Advertising Sets gives
/// (§7.8.58), each set's data within LE Read Maximum Advertising Data Length (§7.8.57).
/// A set that does not fit is refused, naming the limit. A handle stays with its set while
/// the set is wanted; then another set may take it (the driver disables the old set and
/// removes it, LE Remove Advertising Set, before configuring the new one).
public struct ExtendedAdvertisingSets: Sendable {
    public internal(set) var driver = ExtendedAdvertisingDriver()
    /// The controller's advertising sets (at least the primary's).
    public let limit: Int
    /// The most advertising (or scan response) data per set, in octets.
    public let maximumDataLength: Int

    public init(limit: Int, maximumDataLength: Int) {
        self.limit = max(1, min(limit, 0xF0))
        self.maximumDataLength = maximumDataLength
    }

    /// The handle set `id` has, if any.
    public func handle(of id: String) -> UInt8? {
        id == AdvertisingSet.primaryID ? 0 : driver.handles.first { $0.value == id && $0.key != 0 }?.key
    }

    /// The core's intent: exactly these sets advertised (`randomAddress`: the address a
    /// random own address stands for). What does not fit is refused; the batch to run now.
    public mutating func setDesired(_ wanted: [AdvertisingSet], randomAddress: BluetoothAddress?) -> (events: [TransportEvent], batch: ExtendedAdvertisingDriver.Batch?) {
        var events: [TransportEvent] = []
        var placed: [(UInt8, AdvertisingSet)] = []
        let ids = Set(wanted.map(\.id))
        for set in wanted {
            if let reason = refusal(of: set) {
                events.append(.advertisingRefused(whileConnected: false, reason: reason, set: set.id))
                continue
            }
            guard let handle = handle(of: set.id) ?? freeHandle(besides: placed.map(\.0), wanted: ids) else {
                let reason = "the controller has \(limit) advertising set\(limit == 1 ? "" : "s"), all in use: set \"\(set.id)\" cannot be added"
                events.append(.advertisingRefused(whileConnected: false, reason: reason, set: set.id))
                continue
            }
            placed.append((handle, set))
        }
        var batch: ExtendedAdvertisingDriver.Batch?
        // Unwanted sets off, then the wanted ones in order.
        let kept = Set(placed.map(\.0))
        for (handle, id) in driver.handles.sorted(by: { $0.key < $1.key }) where !kept.contains(handle) {
            batch = driver.setDesired(nil, handle: handle, id: id) ?? batch
        }
        for (handle, set) in placed {
            if let old = driver.id(of: handle), old != set.id, driver.state(of: handle) == .on {
                // Its handle goes to another set: it is off once that one's batch starts.
                events.append(.advertisingChanged(false, set: old))
            }
            let c = ExtendedAdvertisingDriver.Configuration(payloads: set.payloads, randomAddress: randomAddress)
            batch = driver.setDesired(c, handle: handle, id: set.id) ?? batch
        }
        return (events, batch)
    }

    /// Why set `set` cannot be advertised by this controller, if it cannot.
    func refusal(of set: AdvertisingSet) -> String? {
        let longest = max(set.payloads.advertisingData.count, set.payloads.scanResponseData.count)
        guard longest > maximumDataLength else { return nil }
        return "set \"\(set.id)\" has \(longest) bytes of data; the controller takes at most \(maximumDataLength) per set"
    }

    /// A handle no set holds, or one whose set is no longer wanted and has no batch running.
    private func freeHandle(besides taken: [UInt8], wanted: Set<String>) -> UInt8? {
        (1..<UInt8(limit)).first { h in
            guard !taken.contains(h) else { return false }
            guard let id = driver.id(of: h) else { return true }
            guard !wanted.contains(id) else { return false }
            return driver.state(of: h) == .off || driver.state(of: h) == .on
        }
    }

    public mutating func batchFinished(failure: (command: HCICommand, status: HCIStatus)?, connected: Bool) -> (events: [TransportEvent], next: ExtendedAdvertisingDriver.Batch?) {
        driver.batchFinished(failure: failure, connected: connected)
    }

    public mutating func connectionOpened(connectionHandle: UInt16, advertisingHandle: UInt8?) -> [TransportEvent] {
        driver.connectionOpened(connectionHandle: connectionHandle, advertisingHandle: advertisingHandle)
    }

    public mutating func setTerminated(handle: UInt8, status: HCIStatus, connectionHandle: UInt16) -> [TransportEvent] {
        driver.setTerminated(handle: handle, status: status, connectionHandle: connectionHandle)
    }

    /// A new random address for every set that uses one: the sets on the air pause around
    /// it one after the other; the others take it with their next configuration.
    public mutating func changeAddress(_ address: BluetoothAddress) -> [HCICommand] {
        var commands: [HCICommand] = []
        for handle in driver.handles.keys.sorted() {
            if let b = driver.changeAddress(address, handle: handle) { commands += b.commands }
        }
        return commands
    }
}
