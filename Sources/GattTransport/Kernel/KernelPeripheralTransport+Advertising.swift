import GattCore
import NIOCore

// Advertising on the kernel transport: instances registered through mgmt, never raw HCI
// advertising commands (the kernel drives the controller's advertising, legacy or extended).
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

        /// For the controller line of the log.
        var summary: String {
            let how = commands == .extended ? "mgmt extended advertising" : "mgmt Add Advertising"
            return "advertising through \(how) (\(features.maximumInstances) instances, \(features.maximumAdvertisingDataLength)-byte data)"
        }
    }

    public func setAdvertising(_ payloads: AdvertisingPayloads?) {
        guard adapterState == .ready, let op = advertising.setDesired(payloads) else { return }
        run(op)
    }

    /// A connection in the peripheral role ended advertising. Once the core has answered the
    /// events (on this loop turn), an instance nobody wants any more is removed.
    func advertisingEndedByConnection() {
        for e in advertising.connectionOpened() { onEvent?(e) }
        let generation = self.generation
        eventLoop.execute {
            guard generation == self.generation, self.adapterState == .ready, let op = self.advertising.settle() else { return }
            self.run(op)
        }
    }

    /// Runs one mgmt advertising operation on the command thread.
    func run(_ op: KernelAdvertisingDriver.Operation) {
        let generation = self.generation
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
            guard generation == self.generation else { return }
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
                    guard generation == self.generation else { return }
                    self.run(op)
                }
                return
            }
            self.advertisingBusyRetries = 0
            let connected = !self.links.isEmpty || !self.peripheralHandles.isEmpty
            let (events, next) = self.advertising.finished(outcome, connected: connected)
            for e in events { self.onEvent?(e) }
            if let next { self.run(next) }
        }
    }

    /// How often an operation the kernel answered Busy is tried again (about 3 s in all).
    static let advertisingBusyRetryLimit = 8

    /// Reads what the kernel offers for advertising (on the command thread, at open).
    static func readAdvertisingSupport(index: Int) throws(KernelTransportError) -> AdvertisingSupport {
        let (commands, features) = try KernelManagement.readAdvertising(index: index)
        return AdvertisingSupport(commands: commands, features: features)
    }

    /// At close: our instance leaves the air with gattd (mgmt instances outlive the process
    /// that added them).
    static func removeOwnAdvertising(index: Int, instance: UInt8) {
        try? KernelManagement.removeAdvertising(index: index, instance: instance)
    }
}
