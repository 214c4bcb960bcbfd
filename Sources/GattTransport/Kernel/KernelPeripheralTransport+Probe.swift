import GattCore
import NIOCore

extension KernelPeripheralTransport {
    /// `gattd --probe` on the kernel transport: read-only. The raw HCI socket reads the
    /// controller's version and LE features (a down adapter is brought up first, HCIDEVUP),
    /// mgmt reads the advertising features; no mgmt setting, key or advertising instance is
    /// touched, so probing an adapter a running gattd serves is harmless.
    public func probe(timeout: TimeAmount) -> EventLoopFuture<ControllerProbe> {
        let index = self.index
        let adapter = adapterName
        return commands.thread.runIfActive(eventLoop: eventLoop) { () throws -> ControllerProbe in
            let controller = try KernelHCIController(index: index, preparing: false)
            defer { controller.close() }
            let info = try controller.info()
            let support = Result { () throws(KernelTransportError) in try KernelControllerInfo.readAdvertisingSupport(index: index) }
            let c = KernelControllerInfo.make(controller, info, try? support.get())
            var description = "\(c.address) (\(adapter), kernel): \(c.details)"
            if case .failure(let error) = support { description += " (advertising features unknown: \(error))" }
            return ControllerProbe(description: description, controller: c)
        }.flatMapErrorThrowing { error in
            throw ControllerProbeFailure(Self.openFailure(error, adapter: adapter))
        }.always { _ in
            self.commands.thread.shutdownGracefully { _ in }
        }
    }
}
