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
        let (refused, operations) = advertising.setDesired(sets, limits: controllerInfo?.limits)
        for (id, op) in operations { run(op, set: id) }
        for e in refused { onEvent?(e) }
        return []
    }

    /// A connection in the peripheral role ended a connectable set's advertising (one still
    /// wanted is added again). Once the core has answered the events (on this loop turn),
    /// instances nobody wants any more are removed.
    func advertisingEndedByConnection() {
        for e in advertising.connectionOpened() { onEvent?(e) }
        let session = lifecycle.session
        eventLoop.execute {
            guard self.lifecycle.isReady(in: session) else { return }
            for (id, op) in self.advertising.settle() { self.run(op, set: id) }
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
            guard self.lifecycle.isCurrent(session) else { return }
            let outcome: KernelAdvertisingDriver.Outcome = switch result {
            case .success(let o): o
            case .failure(let error): .failed(status: nil, reason: "\(error)")
            }
            guard let (events, next) = self.advertising.finished(id, op, outcome, connected: self.links.anyConnected) else { return }
            for e in events { self.onEvent?(e) }
            switch next {
            case .run(let op)?: self.run(op, set: id)
            case .retry(let op, let delay)?:
                self.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                    guard self.lifecycle.isCurrent(session) else { return }
                    self.run(op, set: id)
                }
            case nil: break
            }
        }
    }

    /// Reads what the kernel offers for advertising (on the command thread, at open).
    static func readAdvertisingSupport(index: Int) throws(KernelTransportError) -> AdvertisingSupport {
        let (commands, features) = try KernelManagement.readAdvertising(index: index)
        return AdvertisingSupport(commands: commands, features: features)
    }
}
