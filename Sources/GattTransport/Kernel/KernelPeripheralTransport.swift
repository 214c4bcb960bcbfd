import GattCore
import Logging
import NIOCore
import NIOPosix

/// The Linux kernel's Bluetooth stack below the seam (`--transport hciN`, `kernel:hciN`): the
/// I/O shell of the sans-I/O `KernelAdapter`, which the daemon's stack runs (`PeripheralStack<KernelAdapter>`).
/// The kernel runs the controller, its advertising, the LE links, L2CAP and SMP; the rules
/// decide, and this shell only moves bytes and events: it opens the adapter, accepts and reads
/// the centrals' ATT sockets (one ``KernelATTBearer`` per bearer), feeds the rules what it
/// reads and what the kernel answers (`runKernel`), and performs what they ask (`perform`):
/// socket writes, HCI and mgmt commands, listening sockets.
///
/// One event loop owns all mutable state. HCI and mgmt commands block until they complete,
/// so they run on `commandThread`, one at a time, and their results hop back to the loop.
/// Socket input arrives through ``SocketPoller`` (one poll thread).
public final class KernelPeripheralTransport: PeripheralTransport, KernelShell, @unchecked Sendable {
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    public var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)?
    let logger: Logger
    /// N of hciN.
    public let index: Int
    var adapterName: String { "hci\(index)" }
    /// Runs the blocking HCI and mgmt commands (and the adapter bring-up), one at a time.
    let commands: KernelCommands

    var poller: SocketPoller?
    private var monitor: KernelAdapterMonitor?
    /// The adapter's mgmt events: answers Just Works confirmations itself (bluetoothd's agent
    /// is not running), passes on keys and prompts, writes the answers to prompts.
    var agent: KernelPairingAgent?
    var controller: KernelHCIController?
    var listener: KernelATTListener?
    /// The bearers' and channels' sockets, and the listening sockets for channels.
    let sockets: KernelSockets

    public init(index: Int, eventLoop: any EventLoop, configuration: GattConfiguration, logger: Logger) {
        self.index = index
        self.eventLoop = eventLoop
        self.logger = logger
        self.commands = KernelCommands(index: index, eventLoop: eventLoop, logger: logger)
        self.sockets = KernelSockets(adapterName: "hci\(index)", eventLoop: eventLoop, logger: logger)
        sockets.feed = { [unowned self] call in rules(call) }
        sockets.report = { [unowned self] event in onEvent?(event) }
    }

    /// The kernel's rules, run by the daemon's stack; this shell performs their actions.
    public func makeStack(core: Peripheral, configuration: GattConfiguration, clock: @escaping () -> Duration) -> any PeripheralStackDriving {
        let stack = PeripheralStack(core: core, below: KernelAdapter(adapterName: adapterName, configuration: configuration))
        stack.attachShell(self, clock: clock)
        return stack
    }

    /// Runs a call on the rules in a turn of the stack (on the event loop).
    func rules(_ call: (inout KernelAdapter, Duration) -> [KernelAction]) {
        guard let runKernel else { return logger.error("\(adapterName): the kernel transport's rules are not run by a stack") }
        runKernel { rules, now in
            let actions = call(&rules, now)
            return actions.isEmpty ? [] : actions.map(KernelOutput.init)
        }
    }

    /// The kernel owns the adapter's addresses and routes the ATT channel by them; mgmt puts the
    /// primary advertising channel on LE Coded only together with the secondary one.
    public func refusal(of configuration: GattConfiguration) -> String? {
        for set in configuration.advertisingSets {
            if case .extended(.leCoded, let secondary) = set.advertising.pdus, secondary != .leCoded {
                return "\(set.path).primary_phy: \"coded\" needs \"secondary_phy\": \"coded\" with the kernel transport (kernel:\(adapterName)): "
                    + "the kernel's advertising API puts both channels on LE Coded or the primary on LE 1M; or use an H4 transport (user:, serial:, tcp:, unix:)"
            }
        }
        switch configuration.advertising.ownAddressType {
        case .public: return nil
        case .random:
            return "advertising.own_address_type: \"random\" is not supported with the kernel transport (kernel:\(adapterName)); "
                + "give the adapter a static random address with `btmgmt -i \(adapterName) static-addr ADDR`, or use an H4 transport (user:, serial:, tcp:, unix:)"
        case .rpa:
            return "advertising.own_address_type: \"rpa\" is not supported with the kernel transport (kernel:\(adapterName)); "
                + "the kernel makes its own private addresses: `btmgmt -i \(adapterName) privacy on` (before gattd starts), or use an H4 transport (user:, serial:, tcp:, unix:)"
        }
    }

    // MARK: - Lifecycle

    /// The first call refuses to run beside bluetoothd and sets up the poll thread, the
    /// adapter monitor and the pairing agent; every call then brings the adapter up, reads
    /// it and listens on the ATT channel.
    public func open() -> EventLoopFuture<Void> {
        if poller == nil {
            if let warning = BluetoothdDetector.warning(adapter: adapterName) {
                return eventLoop.makeFailedFuture(TransportOpenFailure(warning, retry: .never(exitCode: 69)))
            }
            do {
                try startMonitoring()
            } catch {
                // No Bluetooth sockets in this kernel, or no permission: waiting cannot fix it.
                let permission = (error as? KernelTransportError)?.kind == .permissionDenied
                return eventLoop.makeFailedFuture(TransportOpenFailure("\(error)", retry: .never(exitCode: permission ? 77 : 69)))
            }
        }
        var decision = KernelAdapterLifecycle.OpenDecision.nothing
        rules { rules, _ in
            decision = rules.open()
            return []
        }
        let session: Int
        switch decision {
        case .away:
            return eventLoop.makeFailedFuture(TransportOpenFailure("\(adapterName) is down; waiting for it to come back", retry: .whenAvailable))
        case .nothing:
            return eventLoop.makeSucceededVoidFuture()
        case .start(let s):
            session = s
        }
        let index = self.index
        return commands.thread.runIfActive(eventLoop: eventLoop) { () throws -> (KernelHCIController, KernelAdapterInfo, Result<KernelAdvertisingSupport, KernelTransportError>) in
            let controller = try KernelHCIController(index: index)
            do {
                let info = try controller.info()
                let support = Result { () throws(KernelTransportError) in try KernelControllerInfo.readAdvertisingSupport(index: index) }
                return (controller, info, support)
            } catch {
                controller.close()
                throw error
            }
        }.flatMapErrorThrowing { error in
            self.rules { rules, _ in
                rules.openFailed(session: session)
                return []
            }
            throw Self.openFailure(error, adapter: self.adapterName)
        }.flatMapThrowing { (controller, info, support) in
            try self.adapterOpened(controller, info, support, session: session)
        }
    }

    private func startMonitoring() throws {
        let poller: SocketPoller
        do {
            poller = try SocketPoller()
        } catch {
            throw KernelTransportError.system("pipe (the poll thread's)", errno: error.errno)
        }
        let monitor: KernelAdapterMonitor
        do {
            monitor = try KernelAdapterMonitor(index: index, poller: poller)
        } catch {
            poller.shutdown()
            throw error
        }
        self.poller = poller
        sockets.poller = poller
        self.monitor = monitor
        monitor.start(on: eventLoop) { [weak self] event in self?.adapterEvent(event) }
        do {
            let agent = try KernelPairingAgent(index: index, poller: poller)
            self.agent = agent
            agent.start(
                on: eventLoop, onConfirmation: { [weak self] confirmation in self?.pairingConfirmed(confirmation) },
                onEvent: { [weak self] event in self?.rules { rules, now in rules.managementEvent(event, now: now) } })
        } catch {
            logger.warning("no pairing agent (centrals cannot pair on kernels that ask user space to confirm Just Works): \(error)")
        }
    }

    /// An open failure in the daemon's terms: missing capabilities and bluetoothd are final
    /// (exit 77 and 69), a missing adapter is waited for, the rest retried with backoff.
    static func openFailure(_ error: any Error, adapter: String) -> TransportOpenFailure {
        switch (error as? KernelTransportError)?.kind {
        case .permissionDenied?: TransportOpenFailure("\(error)", retry: .never(exitCode: 77))
        case .bluetoothdRunning?: TransportOpenFailure("\(error)", retry: .never(exitCode: 69))
        case .noSuchAdapter?: TransportOpenFailure("\(error); waiting for \(adapter) to appear", retry: .whenAvailable)
        default: TransportOpenFailure("cannot open \(adapter): \(error)", retry: .withBackoff)
        }
    }

    private func adapterOpened(
        _ controller: KernelHCIController, _ info: KernelAdapterInfo, _ support: Result<KernelAdvertisingSupport, KernelTransportError>, session: Int
    ) throws {
        var opening = false
        var away = false
        rules { rules, _ in
            opening = rules.isOpening(session: session)
            away = rules.waitsForAdapter
            return []
        }
        guard opening, let poller else {
            commands.thread.submit { _ in controller.close() }
            throw TransportOpenFailure(
                "\(adapterName) went away while opening\(away ? "" : " and came back"); \(away ? "waiting for it" : "opening it again")",
                retry: away ? .whenAvailable : .withBackoff)
        }
        let listener: KernelATTListener
        do {
            listener = try KernelATTListener(address: KernelBDAddress(controller.address.address, type: .lePublic), adapter: adapterName, poller: poller)
        } catch {
            commands.thread.submit { _ in controller.close() }
            rules { rules, _ in
                rules.openFailed(session: session)
                return []
            }
            throw Self.openFailure(error, adapter: adapterName)
        }
        self.controller = controller
        self.listener = listener
        // A kernel before 4.1 has no advertising instances; Add Advertising will say so.
        let advertising = try? support.get()
        let controllerInfo = KernelControllerInfo.make(controller, info, advertising)
        var description = "\(controller.address.address) (\(adapterName), kernel): \(controllerInfo.details)"
        if case .failure(let unknownFeatures) = support { description += " (advertising features unknown: \(unknownFeatures))" }
        listener.start(on: eventLoop) { [weak self] bearer in self?.sockets.accepted(bearer) }
        rules { rules, _ in rules.opened(session: session, controller: controllerInfo, support: advertising, description: description) }
    }

    /// Closes every socket and the command thread.
    public func close() -> EventLoopFuture<Void> {
        // Our instances outlive the process in the kernel: take them off the air with us.
        var ownInstances: [UInt8] = []
        rules { rules, _ in
            let closed = rules.close()
            ownInstances = closed.instances
            return closed.sockets.map(KernelAction.close)
        }
        sockets.closeAll()
        listener?.close()
        listener = nil
        monitor?.close()
        monitor = nil
        agent?.close()
        agent = nil
        let poller = self.poller
        self.poller = nil
        sockets.poller = nil
        let controller = self.controller
        self.controller = nil
        let index = self.index, instances = ownInstances
        return commands.thread.runIfActive(eventLoop: eventLoop) {
            for instance in instances { try? KernelManagement.removeAdvertising(index: index, instance: instance) }
            controller?.close()
            poller?.shutdown()
        }.always { _ in
            self.commands.thread.shutdownGracefully { _ in }
        }
    }

    // MARK: - What the kernel says

    private func adapterEvent(_ event: KernelAdapterEvent) {
        var available = false
        rules { rules, now in
            let (actions, appeared) = rules.adapterEvent(event, now: now)
            available = appeared
            return actions
        }
        if available { onAvailable?() }
    }

    private func pairingConfirmed(_ c: KernelPairingAgent.Confirmation) {
        if c.accepted {
            logger.info("pairing with \(c.peer.address): accepted Just Works (the kernel asked for a user confirmation)")
        } else {
            logger.warning("pairing with \(c.peer.address): could not answer the kernel's Just Works confirmation")
        }
    }

    /// Unbond: the rules have the kernel forget the central's keys (mgmt Unpair Device).
    public func removeBond(_ bond: Bond) {
        rules { rules, _ in rules.removeBond(bond) }
    }

    /// gattd serves ATT on the kernel's sockets: it registers no database.
    public func serveDatabase(_ database: GATTDatabase) {}

    public func takeL2CAPChannel(_ ticket: L2CAPChannelTicket) -> Int32? { sockets.l2cap.take(ticket) }

    /// True when the kernel offers Enhanced Credit Based mode and gattd may bind PSM 0x0027
    /// (decided once; why not is logged once), unless listening on the adapter failed.
    public var supportsEnhancedATT: Bool { sockets.supportsEnhancedATT }
}
