import GattCore
import GattHost

/// The kernel transport's rules as one sans-I/O value, run by the daemon's stack
/// (`PeripheralStack<KernelAdapter>`) on its one loop, timer and clock, as the H4 host is: the adapter's
/// lifecycle, the centrals' links and their ATT bearers (fixed and Enhanced), the pairing
/// questions and keys, the programs' link requests and the advertising instances. Its shell
/// (`KernelPeripheralTransport`) owns the sockets, the poll thread and the mgmt I/O: it feeds in
/// what the kernel says (`KernelShell.runKernel`) and performs the `KernelAction`s that come out.
public struct KernelAdapter {
    /// hciN, for messages.
    let adapterName: String
    /// Idle, opening, ready, away or closed; work in flight belongs to its session.
    var lifecycle = KernelAdapterLifecycle()
    /// The centrals' links and their ATT bearers, fixed and Enhanced.
    var bearers = KernelBearers()
    /// Each link's parameters and the programs' link requests.
    var linkControl = KernelLinkControl()
    /// Whether Enhanced ATT is asked for (`setEnhancedATT`).
    var enhancedATT = false
    /// The apps' channel servers to listen for while the adapter is open.
    var channelServers: [L2CAPChannelServer] = []
    /// The advertising sets as mgmt instances.
    var advertising = KernelAdvertising()
    /// A connection ended advertising: settle the instances once the core has answered (`flush`).
    var advertisingSettleOwed = false
    /// What the open adapter is and can do (read at every open).
    var controllerInfo: ControllerInfo?
    /// `connection.preferred`: set as the adapter's default connection parameters at open.
    var preferredConnection: LEConnectionParameters?
    /// The `security` settings, the pairing questions, the bonds and the kernel's keys.
    var pairing: KernelPairing
    /// What waits for a time (`tick`).
    var timers = KernelTimers()
    /// What calls without outputs owed (PDUs `send` queued, keys to load, sockets to listen
    /// on): given out first by the next call that returns actions, or at `flush`.
    var outbox: [KernelAction] = []

    public init(adapterName: String, configuration: GattConfiguration) {
        self.adapterName = adapterName
        self.pairing = KernelPairing(settings: KernelManagement.SecuritySettings(configuration.security))
        apply(configuration)
    }

    /// The config's settings below the seam.
    private mutating func apply(_ configuration: GattConfiguration) {
        preferredConnection = configuration.advertising.preferredConnection?.connectionParameters
        linkControl.connectionPHYs = configuration.advertising.requestDataLengthAndPHY ? configuration.advertising.connectionPHYs : nil
    }

    // MARK: - Lifecycle

    /// `open`: what to do (start a session, nothing, or wait for the adapter).
    mutating func open() -> KernelAdapterLifecycle.OpenDecision { lifecycle.open() }

    /// The bring-up of `session` failed.
    mutating func openFailed(session: Int) { lifecycle.openFailed(session: session) }

    /// Whether `session`'s bring-up is still wanted (the shell listens on the ATT channel next).
    func isOpening(session: Int) -> Bool { lifecycle.state == .opening(session: session) }

    /// Whether an open that found its session gone should wait for the adapter.
    var waitsForAdapter: Bool { lifecycle.waitsForAdapter }

    /// The adapter is open in `session` and its ATT channel listened on: listen for channels,
    /// apply the security settings, load the bonds (before any advertising command: the keys are
    /// in before a central can connect), set the preferred parameters, then `.ready`.
    mutating func opened(
        session: Int, controller info: ControllerInfo, support: KernelAdvertisingSupport?, description: String
    ) -> [KernelAction] {
        guard lifecycle.opened(session: session) else { return [] }
        advertising.opened(support: support)
        controllerInfo = info
        var out: [KernelAction] = [.listen(servers: channelServers, enhancedATT: enhancedATT)]
        out.append(.management(.applySecurity(pairing.settings), session: session))
        pairing.kernelKeys = nil
        pairing.loadBonds(session: session, &out)
        if let p = preferredConnection { out.append(.management(.setDefaultConnectionParameters(p), session: session)) }
        out.append(.event(.ready(address: info.address, description: description, controller: info)))
        return out
    }

    /// gattd closes the transport: the bearer sockets to close and, when the adapter was open,
    /// our instances to take off the air (they outlive the process in the kernel).
    mutating func close() -> (sockets: [KernelSocketID], instances: [UInt8]) {
        let instances = lifecycle.close() ? advertising.ownInstances : []
        timers = KernelTimers()
        return (bearers.close(), instances)
    }

    /// The adapter went down or away: its centrals are gone; wait for it.
    mutating func adapterLost(_ why: String) -> [KernelAction] {
        guard let loss = lifecycle.lost(), loss != .nothing else { return [] }
        let wasReady = loss == .ready
        var out: [KernelAction] = []
        if wasReady {
            out.append(.log(.warning, "\(adapterName) \(why): dropping \(bearers.links.ids.count) central(s); waiting for it to come back"))
        }
        out.append(.closeAdapter)
        bearers.adapterLost(why, timers: &timers, &out)
        timers = KernelTimers()
        pairing.adapterLost()
        linkControl.adapterLost()
        advertising.lost()
        advertisingSettleOwed = false
        controllerInfo = nil
        if wasReady { out.append(.event(.lost(reason: "\(adapterName) \(why)"))) }
        return out
    }

    /// What the adapter monitor saw (the raw HCI socket's events).
    mutating func adapterEvent(_ event: KernelAdapterEvent, now: Duration) -> (actions: [KernelAction], available: Bool) {
        guard !lifecycle.isClosed else { return ([], false) }
        var out: [KernelAction] = []
        switch event {
        case .registered, .up:
            out.append(.log(.debug, "\(adapterName): \(event)"))
            return (out, lifecycle.appeared())
        case .down:
            return (adapterLost("went down"), false)
        case .unregistered:
            return (adapterLost("was removed"), false)
        case .leConnectionComplete(let status, let handle, let role, _, let link):
            if status == 0, role == 0x01 {
                linkControl.connected(handle, link, leFeatures: controllerInfo?.leFeatures, links: bearers.links, &out)
            }
            // Role 0x01: we are the peripheral, so this connection (or failed attempt) ended
            // our advertising (Core Spec Vol 6 Part B §4.4.2). Role 0x00 links are not ours.
            if role == 0x01, bearers.connectionComplete(status: status, handle: handle) { advertisingEndedByConnection(&out) }
        case .disconnectionComplete(let status, let handle, let reason):
            bearers.disconnectionComplete(status: status, handle: handle, reason: reason)
            if status == 0 { linkControl.disconnected(handle) }
        case .linkProcedure(let event):
            linkControl.handle(event, leFeatures: controllerInfo?.leFeatures, links: bearers.links, &out)
        case .encryptionChanged(let status, let handle):
            bearers.encryptionChanged(status: status, handle: handle, &out)
        }
        return (out, false)
    }

    /// Reload: the new security settings and preferred parameters (for the kernel now, when open).
    mutating func reconfigure(_ configuration: GattConfiguration) -> [KernelAction] {
        var out: [KernelAction] = []
        if pairing.reconfigure(KernelManagement.SecuritySettings(configuration.security)), lifecycle.isReady {
            out.append(.management(.applySecurity(pairing.settings), session: lifecycle.session))
        }
        let preferred = configuration.advertising.preferredConnection?.connectionParameters
        let changed = preferred != preferredConnection
        apply(configuration)
        if changed, lifecycle.isReady, let preferred {
            out.append(.management(.setDefaultConnectionParameters(preferred), session: lifecycle.session))
        }
        return out
    }

    // MARK: - Bearers (`KernelBearers`)

    /// An ATT socket the kernel accepted (`handle`, `security`: what the shell read of it).
    mutating func accepted(
        socket: KernelSocketID, handle: UInt16?, peer: KernelBDAddress, security: SecurityLevel, now: Duration
    ) -> [KernelAction] {
        guard lifecycle.isReady else { return [.close(socket)] }
        var out: [KernelAction] = []
        let (id, endedAdvertising) = bearers.accepted(socket, handle: handle, peer: peer, security: security, &out)
        if let handle { linkControl.accepted(id, handle: handle, monitorSawIt: !endedAdvertising, &out) }
        // The monitor has not reported this connection yet: it ended advertising all the same.
        if endedAdvertising { advertisingEndedByConnection(&out) }
        out.append(.startReading(socket, bearer: .fixed(id), securityFrom: socket, readsMTU: false, captureHandle: handle ?? id.rawValue))
        out.append(.event(.readyToSend(.fixed(id))))
        return out
    }

    /// A PDU read from a bearer's socket (with the link's security level, and an Enhanced
    /// bearer's send MTU).
    mutating func received(_ pdu: [UInt8], from socket: KernelSocketID, security: SecurityLevel?, sendMTU: Int?) -> [KernelAction] {
        bearers.received(pdu, from: socket, security: security, sendMTU: sendMTU)
    }

    /// The level a `.readSecurity` read.
    mutating func securityRead(socket: KernelSocketID, level: SecurityLevel?, now: Duration) -> [KernelAction] {
        bearers.securityRead(socket: socket, level: level, now: now, timers: &timers)
    }

    /// A bearer's socket closed (EOF or an error).
    mutating func socketClosed(_ socket: KernelSocketID, why: String?, now: Duration) -> [KernelAction] {
        var out: [KernelAction] = []
        if let id = bearers.socketClosed(socket, why: why, now: now, timers: &timers, &out) { pairing.linkEnded(id) }
        return out
    }
}
