import GattCore
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One bearer's socket as the shell holds it: what to read with each PDU, where to record it,
/// and a PDU the socket had no room for.
struct KernelBearerSocket {
    let bearer: KernelATTBearer
    /// Set when the rules start reading it.
    var id: BearerID?
    /// The link's ATT socket, whose security level goes in with each PDU.
    var securityFrom: KernelSocketID?
    /// Whether each PDU goes in with the socket's send MTU (an Enhanced ATT channel's).
    var readsMTU = false
    /// The connection handle its PDUs are recorded with (btsnoop); nil: not recorded.
    var captureHandle: UInt16?
    /// A PDU the socket had no room for: written once it is writable.
    var unsent: [UInt8]?

    init(_ bearer: KernelATTBearer) { self.bearer = bearer }
}

/// The kernel transport's sockets: the centrals' ATT bearers, Enhanced ATT channels and apps'
/// channels, accepted, read and written here, each named to the rules (`KernelAdapter`) by an
/// id; what to do with them is the rules'. What it reads goes to them (`feed`); a PDU written
/// is reported (`report`). The listening sockets for Enhanced ATT and the apps' servers are
/// here too (the ATT channel's is the transport's). Confined to the event loop.
final class KernelSockets: @unchecked Sendable {
    let adapterName: String
    let eventLoop: any EventLoop
    let logger: Logger
    /// Runs a call on the rules in a turn of the stack (the transport's `rules`).
    var feed: (_ call: (inout KernelAdapter, Duration) -> [KernelAction]) -> Void = { _ in }
    /// A transport event for the stack (`.readyToSend`, `.l2capChannelOpened`).
    var report: (TransportEvent) -> Void = { _ in }
    /// The poll thread's (set when the transport first opens).
    var poller: SocketPoller?
    /// The bearers' sockets (fixed and Enhanced ATT), by the id the rules know them by.
    private var bearers: [KernelSocketID: KernelBearerSocket] = [:]
    /// Accepted channels the rules have not placed yet (an EATT bearer, an app's channel).
    private var channels: [KernelSocketID: KernelL2CAPChannel] = [:]
    /// The last socket id given out.
    private var sockets = 0
    /// `--btsnoop` or the `capture` op: the ATT PDUs exchanged (see `PacketCapturing`).
    var capture: BtsnoopWriter?
    /// Apps' L2CAP channel servers, their listening sockets and the accepted channels'
    /// sockets until the daemon takes them.
    let l2cap: KernelL2CAPChannelServers
    /// Enhanced ATT's listening socket on PSM 0x0027, and why the last listen failed.
    private var enhancedListener: KernelL2CAPListener?
    private var enhancedRefusal: String?
    /// Whether the kernel offers Enhanced ATT, decided once.
    private let enhancedATTCheck = KernelEnhancedATTCheck()

    init(adapterName: String, eventLoop: any EventLoop, logger: Logger) {
        self.adapterName = adapterName
        self.eventLoop = eventLoop
        self.logger = logger
        self.l2cap = KernelL2CAPChannelServers(adapterName: adapterName, logger: logger)
    }

    /// A new id for a socket the rules will know.
    private func newSocketID() -> KernelSocketID {
        sockets += 1
        return KernelSocketID(rawValue: sockets)
    }

    // MARK: - Accepting

    /// A link's ATT socket the kernel accepted.
    func accepted(_ bearer: KernelATTBearer) {
        let socket = newSocketID()
        bearers[socket] = KernelBearerSocket(bearer)
        let handle = bearer.connectionHandle()
        let security = (try? bearer.securityLevel())?.level ?? .low
        feed { rules, now in rules.accepted(socket: socket, handle: handle, peer: bearer.peer, security: security, now: now) }
    }

    /// An EATT channel or an app's channel the kernel accepted: the rules find its link.
    func channelAccepted(_ channel: KernelL2CAPChannel, _ purpose: KernelWaitingChannel.Purpose) {
        let socket = newSocketID()
        channels[socket] = channel
        let waiting = KernelWaitingChannel(
            purpose, peer: channel.peer, handle: channel.handle, localCID: channel.localCID, mtu: channel.mtu, peerMTU: channel.peerMTU)
        feed { rules, now in rules.channelAccepted(socket, waiting, now: now) }
    }

    // MARK: - Reading

    /// Starts reading a bearer's socket (an accepted channel's becomes one).
    func startReading(_ socket: KernelSocketID, bearer id: BearerID, securityFrom: KernelSocketID, readsMTU: Bool, captureHandle: UInt16?) {
        if bearers[socket] == nil, let channel = channels.removeValue(forKey: socket) {
            guard let poller else { return _ = Glibc.close(channel.fd) }
            bearers[socket] = KernelBearerSocket(KernelATTBearer(fd: channel.fd, peer: channel.peer, poller: poller))
        }
        guard let bearer = bearers[socket]?.bearer else { return }
        bearers[socket]?.id = id
        bearers[socket]?.securityFrom = securityFrom
        bearers[socket]?.readsMTU = readsMTU
        bearers[socket]?.captureHandle = captureHandle
        bearer.start(
            on: eventLoop,
            onPDU: { [weak self] pdu in self?.read(pdu, from: socket) },
            onClose: { [weak self] reason in self?.closed(socket, reason: reason) })
    }

    private func read(_ pdu: [UInt8], from socket: KernelSocketID) {
        guard let entry = bearers[socket], let id = entry.id else { return }
        logger.trace("\(id) < \(pdu.hexString)")
        if let handle = entry.captureHandle { capture?.writeATT(pdu, handle: handle, direction: .received) }
        let security = entry.securityFrom.flatMap { bearers[$0]?.bearer }.flatMap { try? $0.securityLevel() }?.level
        let sendMTU = entry.readsMTU ? entry.bearer.sendMTU() : nil
        feed { rules, _ in rules.received(pdu, from: socket, security: security, sendMTU: sendMTU) }
    }

    /// The central closed the channel, or its link went (EOF or an error on the socket).
    private func closed(_ socket: KernelSocketID, reason: KernelATTBearer.CloseReason) {
        guard bearers[socket] != nil else { return }
        var why: String?
        if case .error(let code) = reason { why = "read error \(code)" }
        feed { rules, now in rules.socketClosed(socket, why: why, now: now) }
    }

    /// Reads the socket's security level for the rules' check after an Encryption Change (on
    /// the next loop turn: the kernel updates it just after the raw socket sees the event).
    func readSecurity(_ socket: KernelSocketID) {
        eventLoop.execute { [weak self] in
            guard let self else { return }
            let level = self.bearers[socket].flatMap { try? $0.bearer.securityLevel() }?.level
            self.feed { rules, now in rules.securityRead(socket: socket, level: level, now: now) }
        }
    }

    // MARK: - Writing

    /// Writes the PDU, or keeps it until the socket has room (an Enhanced ATT channel waits
    /// for the central's credits); `.readyToSend` follows once it is out (backpressure: the
    /// rest waits in the core's queues).
    func write(_ pdu: [UInt8], on socket: KernelSocketID) {
        guard let entry = bearers[socket], let id = entry.id else { return }
        if let handle = entry.captureHandle { capture?.writeATT(pdu, handle: handle, direction: .sent) }
        do {
            guard try entry.bearer.trySend(pdu) else {
                bearers[socket]?.unsent = pdu
                let bearer = entry.bearer
                bearer.whenWritable(on: eventLoop) { [weak self] in self?.writable(socket, bearer) }
                return
            }
        } catch {
            // The link or channel is going: the socket's onClose cleans up.
            logger.debug("\(id): \(error)")
            return
        }
        logger.trace("\(id) > \(pdu.hexString)")
        report(.readyToSend(id))
    }

    private func writable(_ socket: KernelSocketID, _ bearer: KernelATTBearer) {
        guard bearers[socket]?.bearer === bearer, let pdu = bearers[socket]?.unsent else { return }
        bearers[socket]?.unsent = nil
        write(pdu, on: socket)
    }

    /// Closes a bearer's socket, or an accepted channel's.
    func close(_ socket: KernelSocketID) {
        if let entry = bearers.removeValue(forKey: socket) { entry.bearer.close() }
        if let channel = channels.removeValue(forKey: socket) { _ = Glibc.close(channel.fd) }
    }

    // MARK: - Listening

    /// True when the kernel offers Enhanced Credit Based mode and gattd may bind PSM 0x0027
    /// (decided once; why not is logged once), unless listening on the adapter failed (then
    /// false until a listen succeeds: the daemon asks again when the adapter is ready).
    var supportsEnhancedATT: Bool {
        enhancedATTSupport == .supported && enhancedRefusal == nil
    }

    /// Decided at the first question; why not is logged then, once.
    var enhancedATTSupport: KernelEnhancedATTSupport {
        let logger = self.logger, adapter = adapterName
        return enhancedATTCheck.support { support in
            switch support {
            case .supported:
                logger.debug("\(adapter): the kernel offers Enhanced Credit Based mode: Enhanced ATT available")
            case .unsupported(let why):
                logger.info("\(adapter): no Enhanced ATT on the kernel transport: \(why); the EATT Supported bit stays clear")
            }
        }
    }

    /// Listens for exactly these apps' servers, and on PSM 0x0027 when Enhanced ATT is wanted
    /// (and the kernel supports it); the adapter is open.
    func listen(servers: [L2CAPChannelServer], enhancedATT wanted: Bool, on address: KernelBDAddress?) {
        guard let poller, let address else { return }
        l2cap.want(servers)
        l2cap.reconcile(address: address, poller: poller, eventLoop: eventLoop) { [weak self] channel, server in
            guard let self else { return _ = Glibc.close(channel.fd) }
            self.channelAccepted(channel, .server(server))
        }
        let support = wanted ? enhancedATTSupport : .unsupported("not asked for")
        switch KernelEnhancedATTPlan(wanted: wanted, support: support, adapterReady: true, listening: enhancedListener != nil) {
        case .nothing:
            return
        case .stopListening:
            enhancedListener?.close()
            enhancedListener = nil
            logger.debug("\(adapterName): stopped listening for Enhanced ATT (PSM 0x0027); new EATT channels are refused")
        case .listen:
            let listener: KernelL2CAPListener
            do {
                listener = try KernelL2CAPListener(
                    server: KernelEnhancedATT.server, address: address, adapter: adapterName, poller: poller, mode: .enhancedCreditBased)
            } catch {
                let message = "\(error)"
                if enhancedRefusal != message {
                    enhancedRefusal = message
                    logger.warning("cannot listen for \(message); Enhanced ATT is off (the EATT Supported bit stays clear)")
                }
                return
            }
            enhancedRefusal = nil
            enhancedListener = listener
            listener.start(on: eventLoop) { [weak self] channel in
                guard let self else { return _ = Glibc.close(channel.fd) }
                self.channelAccepted(channel, .enhancedATT)
            }
            logger.debug(
                "\(adapterName): listening for Enhanced ATT on PSM 0x0027 (Enhanced Credit Based, encrypted links only, MTU \(KernelEnhancedATT.mtu))")
        }
    }

    /// The adapter went, or gattd stops: no listening socket (the servers and Enhanced ATT
    /// asked for stay for the next open); accepted channels nobody took are closed.
    func closeListeners() {
        l2cap.close()
        enhancedListener?.close()
        enhancedListener = nil
    }

    /// gattd stops: every socket closed, none reported.
    func closeAll() {
        for socket in bearers.keys.sorted() { bearers.removeValue(forKey: socket)?.bearer.close() }
        for socket in channels.keys.sorted() { _ = Glibc.close(channels.removeValue(forKey: socket)!.fd) }
        closeListeners()
    }

    /// Raises the socket's BT_SECURITY, so the kernel sends an SMP Security Request.
    func requestSecurity(_ socket: KernelSocketID, _ level: SecurityLevel, _ id: ConnectionID, what: String, peer: BluetoothAddress) {
        guard let bearer = bearers[socket]?.bearer else { return }
        do {
            try bearer.requestSecurity(level)
            logger.info("\(id): \(what); asked \(peer) to pair (SMP Security Request)")
        } catch {
            logger.warning(
                "\(id): \(what), and \(error). If \(adapterName) was powered on before any mgmt client touched it, power-cycle it (btmgmt -i \(adapterName) power off; gattd powers it on again)"
            )
        }
    }

    /// An app's channel: its socket kept for the daemon, reported on the central's connection.
    func openChannel(_ socket: KernelSocketID, server: L2CAPChannelServer, connection id: ConnectionID, linkKnown: Bool) {
        guard let channel = channels.removeValue(forKey: socket) else { return }
        let opened = l2cap.opened(channel, on: server)
        let unknown = linkKnown ? "" : "; no ATT link of it is known"
        logger.debug(
            "\(id): \(channel.peer) opened L2CAP channel \"\(server.id)\" (PSM \(server.psm), MTU \(opened.mtu), theirs \(opened.peerMTU))\(unknown)")
        report(.l2capChannelOpened(id, opened))
    }
}
