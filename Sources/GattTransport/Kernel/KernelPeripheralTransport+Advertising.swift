import GattCore
import NIOCore

// Advertising on the kernel transport: one mgmt advertising instance per advertising set, never
// raw HCI advertising commands (the kernel drives the controller's advertising, legacy or
// extended; on a controller without advertising sets it takes the instances in turn itself).
extension KernelPeripheralTransport {
    /// What the kernel offers for advertising, read at every open.
    struct AdvertisingSupport: Sendable, Equatable {
        var commands: KernelAdvertisingDriver.Commands
        var features: KernelManagement.AdvertisingFeatures

        init(commands supported: Set<UInt16>, features: KernelManagement.AdvertisingFeatures) {
            let extended = supported.contains(KernelManagement.Opcode.addExtendedAdvertisingParameters.rawValue)
                && supported.contains(KernelManagement.Opcode.addExtendedAdvertisingData.rawValue)
            self.commands = extended ? .extended : .addAdvertising
            self.features = features
        }

        /// What sets fit: as many as the kernel holds instances, the data length it reported,
        /// extended PDUs when it offers a secondary-channel PHY. On a controller without
        /// advertising sets (`extendedController` false) the kernel gives its instances turns.
        func limits(extendedController: Bool) -> AdvertisingLimits {
            let phys: KernelManagement.AdvertisingFlags = [.secondary1M, .secondary2M, .secondaryCoded]
            return AdvertisingLimits(
                numberOfSets: features.maximumInstances, maximumDataLength: features.maximumAdvertisingDataLength,
                extendedPDUs: commands == .extended && !features.supportedFlags.isDisjoint(with: phys), setsTakeTurns: !extendedController)
        }
    }

    /// What the controller is and can do, from what opening it read: the kernel sends the
    /// advertising commands, extended ones when the controller has LE Extended Advertising
    /// (the kernel's `ext_adv_capable`).
    static func controllerInfo(_ controller: KernelHCIController, _ info: KernelAdapterInfo, _ support: AdvertisingSupport?) -> ControllerInfo {
        controllerInfo(
            address: controller.address.address, version: controller.version, leFeatures: LEFeatures(rawValue: controller.leFeatures),
            info, support)
    }

    static func controllerInfo(
        address: BluetoothAddress, version: HCILocalVersionInformation?, leFeatures: LEFeatures, _ info: KernelAdapterInfo, _ support: AdvertisingSupport?
    ) -> ControllerInfo {
        var c = ControllerInfo()
        c.address = address
        c.version = version
        c.leFeatures = leFeatures
        c.aclDataPacketLength = info.aclMTU
        c.totalACLDataPackets = info.aclPackets
        let extended = c.leFeatures.contains(.extendedAdvertising)
        let limits = support?.limits(extendedController: extended)
            ?? AdvertisingLimits(numberOfSets: 1, maximumDataLength: AdvertisingPayloadBuilder.maximumDataLength, extendedPDUs: false)
        c.advertisingCommands = extended ? .extended(sets: limits.numberOfSets ?? 1, maximumDataLength: limits.maximumDataLength) : .legacy
        let through = support?.commands == .extended ? "Add Extended Advertising" : "Add Advertising"
        c.advertisingOwner = .stack(
            limits: limits,
            summary: "\(c.advertisingCommands) by the kernel, through mgmt \(through) ("
                + "\(limits.numberOfSets.map { "\($0) instances" } ?? "instances"), \(limits.maximumDataLength)-byte data"
                + "\(limits.setsTakeTurns ? ", sets take turns" : ""))")
        // It advertises connectable sets from the controller's address, the others from a
        // non-resolvable private address it picks itself.
        c.nonConnectableSetsUseControllerAddress = false
        return c
    }

    public func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Never] {
        guard lifecycle.isReady else { return [] }
        var refused: [TransportEvent] = []
        for set in sets where advertisingDrivers[set.id] == nil {
            if let reason = advertisingRefusal(of: set, among: sets) {
                refused.append(.advertisingRefused(whileConnected: false, reason: reason, set: set.id))
                continue
            }
            advertisingDrivers[set.id] = KernelAdvertisingDriver(instance: instanceNumber(for: set.id), setID: set.id, commands: advertisingCommands)
        }
        let wanted = Dictionary(sets.map { ($0.id, $0.payloads) }, uniquingKeysWith: { first, _ in first })
        for id in advertisingDrivers.keys.sorted() {
            if let op = advertisingDrivers[id]?.setDesired(wanted[id]) { run(op, set: id) }
        }
        for e in refused { onEvent?(e) }
        return []
    }

    /// Why the kernel cannot take this set (beyond its instances, data or PHYs), in words
    /// naming the set's config path; nil when it fits.
    private func advertisingRefusal(of set: AdvertisingSet, among sets: [AdvertisingSet]) -> String? {
        guard let limits = controllerInfo?.limits else { return nil }
        var all = sets.filter { advertisingDrivers[$0.id] != nil }
        all.append(set)
        guard let violation = limits.violations(of: all).first(where: { $0.field.hasPrefix(set.path) }) else { return nil }
        return "\(violation)"
    }

    /// Instance numbers are stable per set for the life of the process: 1 for the primary set,
    /// the next free one for each other set as it first comes.
    private func instanceNumber(for id: String) -> UInt8 {
        if id == AdvertisingSet.primaryID { return 1 }
        if let n = advertisingInstances[id] { return n }
        let used = Set(advertisingInstances.values)
        let n = (2...UInt8(254)).first { !used.contains($0) } ?? 254
        advertisingInstances[id] = n
        return n
    }

    /// A connection in the peripheral role ended a connectable set's advertising (which one,
    /// only an extended controller tells, so every connectable instance counts as ended; one
    /// still wanted is added again). Once the core has answered the events (on this loop
    /// turn), instances nobody wants any more are removed.
    func advertisingEndedByConnection() {
        for id in advertisingDrivers.keys.sorted() {
            guard advertisingDrivers[id]?.isConnectable == true else { continue }
            for e in advertisingDrivers[id]?.connectionOpened() ?? [] { onEvent?(e) }
        }
        let session = lifecycle.session
        eventLoop.execute {
            guard self.lifecycle.isReady(in: session) else { return }
            for id in self.advertisingDrivers.keys.sorted() {
                if let op = self.advertisingDrivers[id]?.settle() { self.run(op, set: id) }
            }
        }
    }

    /// Runs one mgmt advertising operation of `set` on the command thread.
    func run(_ op: KernelAdvertisingDriver.Operation, set id: String) {
        let session = lifecycle.session
        let index = self.index
        commandThread.runIfActive(eventLoop: eventLoop) { () -> KernelAdvertisingDriver.Outcome in
            do throws(KernelTransportError) {
                switch op {
                case .add(let instance, let commands):
                    try KernelManagement.addAdvertising(index: index, instance, extended: commands == .extended)
                case .replace(let instance, let commands):
                    try? KernelManagement.removeAdvertising(index: index, instance: instance.instance)
                    try KernelManagement.addAdvertising(index: index, instance, extended: commands == .extended)
                case .remove(let instance):
                    try KernelManagement.removeAdvertising(index: index, instance: instance)
                }
                return .done
            } catch {
                if case .commandFailed(let status) = error.kind { return .failed(status: status, reason: error.message) }
                return .failed(status: nil, reason: error.message)
            }
        }.whenComplete { result in
            guard self.lifecycle.isCurrent(session), self.advertisingDrivers[id] != nil else { return }
            let outcome: KernelAdvertisingDriver.Outcome = switch result {
            case .success(let o): o
            case .failure(let error): .failed(status: nil, reason: "\(error)")
            }
            // Busy: the kernel is still powering the adapter on or running another advertising
            // command (mgmt-api, Add Extended Advertising Data). Transient: the same operation
            // again shortly, a few times, before it counts as a refusal.
            if case .failed(KernelManagement.Status.busy, _) = outcome, self.advertisingBusyRetries < Self.advertisingBusyRetryLimit {
                self.advertisingBusyRetries += 1
                self.eventLoop.scheduleTask(in: .milliseconds(50 << min(self.advertisingBusyRetries, 5))) {
                    guard self.lifecycle.isCurrent(session) else { return }
                    self.run(op, set: id)
                }
                return
            }
            self.advertisingBusyRetries = 0
            let connected = self.links.anyConnected
            guard let (events, next) = self.advertisingDrivers[id]?.finished(outcome, connected: connected) else { return }
            for e in events { self.onEvent?(e) }
            if let next { self.run(next, set: id) }
        }
    }

    /// How often an operation the kernel answered Busy is tried again (about 3 s in all).
    static let advertisingBusyRetryLimit = 8

    /// Reads what the kernel offers for advertising (on the command thread, at open).
    static func readAdvertisingSupport(index: Int) throws(KernelTransportError) -> AdvertisingSupport {
        let (commands, features) = try KernelManagement.readAdvertising(index: index)
        return AdvertisingSupport(commands: commands, features: features)
    }

    /// The instances on the air or registered (to remove when gattd stops: mgmt instances
    /// outlive the process that added them).
    var ownInstances: [UInt8] {
        advertisingDrivers.values.filter { $0.state != .off }.map(\.instance).sorted()
    }

    /// The advertising commands every new instance uses (the fallback switches them for good).
    var advertisingCommands: KernelAdvertisingDriver.Commands {
        if advertisingDrivers.values.contains(where: { $0.commands == .addAdvertising }) { return .addAdvertising }
        return advertisingSupport?.commands ?? .addAdvertising
    }
}
