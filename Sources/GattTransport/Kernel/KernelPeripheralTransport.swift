import GattCore
import Logging
import NIOCore
import NIOPosix

/// The Linux kernel's Bluetooth stack below the seam (`--transport hciN`, `kernel:hciN`):
/// the kernel runs the controller, its advertising, the LE links, L2CAP and SMP; this transport
/// registers advertising instances through mgmt (``KernelAdvertisingDriver``) and moves ATT PDUs
/// over the kernel's L2CAP ATT channel, one ``KernelATTBearer`` (one socket) per connected central.
///
/// One event loop owns all mutable state. HCI and mgmt commands block until they complete,
/// so they run on `commandThread`, one at a time, and their results hop back to the loop.
/// Socket input arrives through ``SocketPoller`` (one poll thread).
public final class KernelPeripheralTransport: SelfDrivenTransport, @unchecked Sendable {
    public let eventLoop: any EventLoop
    public var onEvent: ((TransportEvent) -> Void)?
    public var onAvailable: (() -> Void)?
    let logger: Logger
    /// N of hciN.
    public let index: Int
    var adapterName: String { "hci\(index)" }
    /// Runs the blocking HCI commands (and the adapter bring-up), one at a time.
    let commandThread = NIOThreadPool(numberOfThreads: 1)

    var poller: SocketPoller?
    private var monitor: KernelAdapterMonitor?
    /// The adapter's mgmt events: answers Just Works confirmations itself (bluetoothd's agent
    /// is not running), passes on keys and prompts, writes the answers to prompts.
    var agent: KernelPairingAgent?
    var controller: KernelHCIController?
    var listener: KernelATTListener?
    /// Idle, opening, ready, away or closed; work in flight belongs to its session.
    var lifecycle = KernelAdapterLifecycle()

    /// The connected centrals, their ids and handles (data; their sockets are in `attSockets`).
    var links = KernelLinkTable()
    /// Each link's parameters and the programs' link requests (`+LinkControl`): the rules
    /// `Host` runs on H4, fed with the events the adapter monitor sees.
    var linkProcedures = KernelPeripheralTransport.freshLinkProcedures
    /// The connected centrals' ATT sockets (fixed bearers), by the id `links` gave each.
    var attSockets: [KernelSocketID: KernelATTBearer] = [:]
    /// `--btsnoop` or the `capture` op: the ATT PDUs exchanged (see `PacketCapturing`).
    var capture: BtsnoopWriter?
    /// The advertising sets as mgmt instances (the rules; this runs their operations).
    var advertising = KernelAdvertising()
    /// What the open adapter is and can do (read at every open).
    var controllerInfo: ControllerInfo?
    /// Apps' L2CAP channel servers, their listening sockets and the accepted channels'
    /// sockets until the daemon takes them (`+L2CAP`).
    let l2cap: KernelL2CAPChannelServers
    /// The PHYs each new link is asked for (`phy.preferred`); nil: none (`data_length_and_phy` off).
    var connectionPHYs: [LEPHY]?
    /// Enhanced ATT: the listening socket on PSM 0x0027 and the bearers (`+EnhancedATT`).
    var enhancedATT = KernelEnhancedATTBearers()
    /// Whether the kernel offers Enhanced ATT, decided once.
    let enhancedATTCheck = KernelEnhancedATTCheck()

    /// `connection.preferred`: set as the adapter's default connection parameters at open.
    var preferredConnection: LEConnectionParameters?
    /// The `security` settings given to the kernel's SMP at every open (and on reload).
    var securitySettings: KernelManagement.SecuritySettings
    /// The security warnings logged since `securitySettings` last changed.
    var securityWarnings: Set<String> = []
    /// The bond store's bonds, loaded into the kernel at every open.
    var bonds: [Bond] = []
    /// The keys the kernel holds as far as this transport knows (loaded, or reported by the
    /// kernel since); nil when unknown (not loaded yet, adapter gone): the next load sends all.
    var kernelKeys: KernelKeySet?
    /// Merges a pairing's key events into one bond.
    var bondAssembler = KernelBondAssembler()
    /// Pairing questions from the kernel waiting for the daemon's answer, by connection.
    var prompts = KernelPairingPrompts()

    public init(index: Int, eventLoop: any EventLoop, configuration: GattConfiguration, logger: Logger) {
        self.index = index
        self.preferredConnection = configuration.advertising.preferredConnection?.connectionParameters
        self.securitySettings = KernelManagement.SecuritySettings(configuration.security)
        self.connectionPHYs = configuration.advertising.requestDataLengthAndPHY ? configuration.advertising.connectionPHYs : nil
        self.eventLoop = eventLoop
        self.logger = logger
        self.l2cap = KernelL2CAPChannelServers(adapterName: "hci\(index)", logger: logger)
        commandThread.start()
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

    public func configure(_ configuration: GattConfiguration, now: Duration) -> [Never] {
        let security = KernelManagement.SecuritySettings(configuration.security)
        if security != securitySettings {
            securitySettings = security
            securityWarnings = []
            if lifecycle.isReady { applySecurity() }
        }
        connectionPHYs = configuration.advertising.requestDataLengthAndPHY ? configuration.advertising.connectionPHYs : nil
        let preferred = configuration.advertising.preferredConnection?.connectionParameters
        guard preferred != preferredConnection else { return [] }
        preferredConnection = preferred
        if lifecycle.isReady { applyPreferredConnection() }
        return []
    }

    /// Makes the kernel ask each central for `connection.preferred`; a kernel without mgmt's
    /// default system configuration (before 5.8) cannot, which is said once.
    func applyPreferredConnection() {
        guard let p = preferredConnection else { return }
        let index = self.index, logger = self.logger, adapter = adapterName
        commandThread.submit { _ in
            do {
                try KernelManagement.setDefaultConnectionParameters(index: index, p)
                logger.debug("\(adapter): default LE connection parameters set to connection.preferred; the kernel asks each central for them")
            } catch {
                logger.warning("\(adapter): cannot set connection.preferred as the adapter's default (\(error)); centrals keep their own connection parameters")
            }
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
        let session: Int
        switch lifecycle.open() {
        case .away:
            return eventLoop.makeFailedFuture(TransportOpenFailure("\(adapterName) is down; waiting for it to come back", retry: .whenAvailable))
        case .nothing:
            return eventLoop.makeSucceededVoidFuture()
        case .start(let s):
            session = s
        }
        let index = self.index
        return commandThread.runIfActive(eventLoop: eventLoop) { () throws -> (KernelHCIController, KernelAdapterInfo, Result<AdvertisingSupport, KernelTransportError>) in
            let controller = try KernelHCIController(index: index)
            do {
                let info = try controller.info()
                let support = Result { () throws(KernelTransportError) in try Self.readAdvertisingSupport(index: index) }
                return (controller, info, support)
            } catch {
                controller.close()
                throw error
            }
        }.flatMapErrorThrowing { error in
            self.lifecycle.openFailed(session: session)
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
        self.monitor = monitor
        monitor.start(on: eventLoop) { [weak self] event in self?.adapterEvent(event) }
        do {
            let agent = try KernelPairingAgent(index: index, poller: poller)
            self.agent = agent
            agent.start(
                on: eventLoop, onConfirmation: { [weak self] confirmation in self?.pairingConfirmed(confirmation) },
                onEvent: { [weak self] event in self?.managementEvent(event) })
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
        _ controller: KernelHCIController, _ info: KernelAdapterInfo, _ support: Result<AdvertisingSupport, KernelTransportError>, session: Int
    ) throws {
        guard lifecycle.state == .opening(session: session), let poller else {
            commandThread.submit { _ in controller.close() }
            let away = lifecycle.waitsForAdapter
            throw TransportOpenFailure(
                "\(adapterName) went away while opening\(away ? "" : " and came back"); \(away ? "waiting for it" : "opening it again")",
                retry: away ? .whenAvailable : .withBackoff)
        }
        let listener: KernelATTListener
        do {
            listener = try KernelATTListener(address: KernelBDAddress(controller.address.address, type: .lePublic), adapter: adapterName, poller: poller)
        } catch {
            commandThread.submit { _ in controller.close() }
            lifecycle.openFailed(session: session)
            throw Self.openFailure(error, adapter: adapterName)
        }
        self.controller = controller
        self.listener = listener
        _ = lifecycle.opened(session: session)
        var unknownFeatures: KernelTransportError?
        switch support {
        case .success(let s): advertising.opened(support: s)
        case .failure(let error):
            // A kernel before 4.1 has no advertising instances; Add Advertising will say so.
            advertising.opened(support: nil)
            unknownFeatures = error
        }
        let controllerInfo = Self.controllerInfo(controller, info, advertising.support)
        self.controllerInfo = controllerInfo
        listener.start(on: eventLoop) { [weak self] bearer in self?.accepted(bearer) }
        reconcileL2CAPServers()
        reconcileEnhancedATT()
        // Queued before any advertising command: the keys are in before a central can connect.
        applySecurity()
        kernelKeys = nil
        loadBondsIntoKernel()
        applyPreferredConnection()
        var description = "\(controller.address.address) (\(adapterName), kernel): \(controllerInfo.details)"
        if let unknownFeatures { description += " (advertising features unknown: \(unknownFeatures))" }
        onEvent?(.ready(address: controller.address.address, description: description, controller: controllerInfo))
    }

    /// Closes every socket and the command thread.
    public func close() -> EventLoopFuture<Void> {
        // Our instance outlives the process in the kernel: take it off the air with us.
        let ownInstances = lifecycle.close() ? advertising.ownInstances : []
        closeEnhancedATT()
        closeLinks()
        listener?.close()
        listener = nil
        closeL2CAPListeners()
        monitor?.close()
        monitor = nil
        agent?.close()
        agent = nil
        let poller = self.poller
        self.poller = nil
        let controller = self.controller
        self.controller = nil
        let index = self.index
        return commandThread.runIfActive(eventLoop: eventLoop) {
            for instance in ownInstances { try? KernelManagement.removeAdvertising(index: index, instance: instance) }
            controller?.close()
            poller?.shutdown()
        }.always { _ in
            self.commandThread.shutdownGracefully { _ in }
        }
    }

    // MARK: - Adapter events

    /// The adapter went down or away: its centrals are gone; wait for it.
    private func adapterLost(_ why: String) {
        guard let loss = lifecycle.lost(), loss != .nothing else { return }
        let wasReady = loss == .ready
        if wasReady {
            logger.warning("\(adapterName) \(why): dropping \(links.ids.count) central(s); waiting for it to come back")
        }
        listener?.close()
        listener = nil
        closeL2CAPListeners()
        closeEnhancedATT()
        for (id, _) in closeLinks() {
            // Connection Terminated By Local Host: the adapter itself went.
            onEvent?(.disconnected(id, reason: HCIStatus(0x16), detail: "adapter \(why)"))
        }
        prompts.removeAll()
        linkProcedures = Self.freshLinkProcedures
        kernelKeys = nil
        advertising.lost()
        if let controller { commandThread.submit { _ in controller.close() } }
        controller = nil
        if wasReady { onEvent?(.lost(reason: "\(adapterName) \(why)")) }
    }

    private func adapterEvent(_ event: KernelAdapterEvent) {
        guard !lifecycle.isClosed else { return }
        switch event {
        case .registered, .up:
            logger.debug("\(adapterName): \(event)")
            if lifecycle.appeared() { onAvailable?() }
        case .down:
            adapterLost("went down")
        case .unregistered:
            adapterLost("was removed")
        case .leConnectionComplete(let status, let handle, let role, _, let link):
            if status == 0, role == 0x01 {
                if let link { apply(linkProcedures.opened(handle, link)) }
                askPreferredPHYs(handle)
            }
            // Role 0x01: we are the peripheral, so this connection (or failed attempt) ended
            // our advertising (Core Spec Vol 6 Part B §4.4.2). Role 0x00 links are not ours.
            guard role == 0x01, links.connectionComplete(status: status, handle: handle) else { return }
            advertisingEndedByConnection()
        case .disconnectionComplete(let status, let handle, let reason):
            links.disconnectionComplete(status: status, handle: handle, reason: reason)
            if status == 0 { linkProcedures.closed(handle) }
        case .linkProcedure(let event):
            apply(linkProcedures.handle(event))
        case .encryptionChanged(let status, let handle):
            encryptionEvent(status: status, handle: handle)
        }
    }

    private func pairingConfirmed(_ c: KernelPairingAgent.Confirmation) {
        if c.accepted {
            logger.info("pairing with \(c.peer.address): accepted Just Works (the kernel asked for a user confirmation)")
        } else {
            logger.warning("pairing with \(c.peer.address): could not answer the kernel's Just Works confirmation")
        }
    }
}
