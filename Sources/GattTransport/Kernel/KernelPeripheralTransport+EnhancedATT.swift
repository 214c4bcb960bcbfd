import GattCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// Enhanced ATT (Core Vol 3 Part F §3.2.11) on the kernel transport: a kernel L2CAP socket
// listens on PSM 0x0027 in Enhanced Credit Based mode (BT_MODE_EXT_FLOWCTL, the kernel's
// `enable_ecred`), at BT_SECURITY medium so the kernel refuses the channels of unencrypted
// links itself. The kernel runs the channels (signalling, credits, segmentation); each accepted
// socket is one bearer whose SDUs are ATT PDUs, read and written here as on the fixed channel.
extension KernelPeripheralTransport {
    /// True when the kernel offers Enhanced Credit Based mode and gattd may bind PSM 0x0027
    /// (decided once; why not is logged once), unless listening on the adapter failed (then
    /// false until a listen succeeds: the daemon asks again when the adapter is ready).
    public var supportsEnhancedATT: Bool {
        enhancedATTSupport == .supported && enhancedATT.refusal == nil
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

    /// Listens on PSM 0x0027 (when supported and the adapter is open) or stops; bearers
    /// already open stay.
    public func setEnhancedATT(_ enabled: Bool) {
        enhancedATT.wanted = enabled
        reconcileEnhancedATT()
    }

    /// Opens or closes the listening socket as `KernelEnhancedATTPlan` says.
    func reconcileEnhancedATT() {
        let support = enhancedATT.wanted ? enhancedATTSupport : .unsupported("not asked for")
        let plan = KernelEnhancedATTPlan(
            wanted: enhancedATT.wanted, support: support, adapterReady: lifecycle.isReady,
            listening: enhancedATT.listener != nil)
        switch plan {
        case .nothing:
            return
        case .stopListening:
            enhancedATT.listener?.close()
            enhancedATT.listener = nil
            logger.debug("\(adapterName): stopped listening for Enhanced ATT (PSM 0x0027); new EATT channels are refused")
        case .listen:
            guard let poller, let address = listener?.address else { return }
            let listener: KernelL2CAPListener
            do {
                listener = try KernelL2CAPListener(
                    server: KernelEnhancedATT.server, address: address, adapter: adapterName, poller: poller, mode: .enhancedCreditBased)
            } catch {
                let message = "\(error)"
                if enhancedATT.refusal != message {
                    enhancedATT.refusal = message
                    logger.warning("cannot listen for \(message); Enhanced ATT is off (the EATT Supported bit stays clear)")
                }
                return
            }
            enhancedATT.refusal = nil
            enhancedATT.listener = listener
            listener.start(on: eventLoop) { [weak self] channel in self?.enhancedChannelAccepted(channel, attemptsLeft: 10) }
            logger.debug(
                "\(adapterName): listening for Enhanced ATT on PSM 0x0027 (Enhanced Credit Based, encrypted links only, MTU \(KernelEnhancedATT.mtu))")
        }
    }

    /// An EATT channel the kernel accepted: a bearer of the central's connection. Its ATT link's
    /// socket may reach the loop after it (two sockets, two accepts): it waits for it a little.
    private func enhancedChannelAccepted(_ channel: KernelL2CAPChannel, attemptsLeft: Int) {
        guard lifecycle.isReady, let poller, let onEvent else {
            _ = Glibc.close(channel.fd)
            return
        }
        guard let connection = l2capConnection(of: channel) else {
            guard attemptsLeft > 0 else {
                logger.debug("\(channel.peer) opened an EATT channel on a link gattd has no ATT bearer of; closed")
                _ = Glibc.close(channel.fd)
                return
            }
            eventLoop.scheduleTask(in: .milliseconds(20)) { [weak self] in
                guard let self else {
                    _ = Glibc.close(channel.fd)
                    return
                }
                self.enhancedChannelAccepted(channel, attemptsLeft: attemptsLeft - 1)
            }
            return
        }
        let taken = Set(enhancedATT.bearers.keys.filter { $0.connection == connection }.map(\.channel))
        let plan = KernelEnhancedBearerPlan(
            connection: connection, localCID: channel.localCID, taken: taken, ourMTU: channel.mtu, peerMTU: channel.peerMTU)
        let id = plan.id
        let bearer = KernelATTBearer(fd: channel.fd, peer: channel.peer, poller: poller)
        enhancedATT.bearers[id] = KernelEnhancedBearer(bearer: bearer, ourMTU: channel.mtu ?? KernelEnhancedATT.mtu, mtu: plan.mtu)
        let theirs = channel.peerMTU.map(String.init) ?? "unknown"
        logger.debug("\(id): \(channel.peer) opened an Enhanced ATT bearer (ATT_MTU \(plan.mtu): ours \(channel.mtu ?? KernelEnhancedATT.mtu), theirs \(theirs))")
        onEvent(.enhancedBearer(id, .opened(mtu: plan.mtu)))
        bearer.start(
            on: eventLoop,
            onPDU: { [weak self] pdu in self?.enhancedReceived(pdu, on: id, from: bearer) },
            onClose: { [weak self] _ in self?.enhancedBearerClosed(id, bearer: bearer) })
        onEvent(.readyToSend(id))
    }

    private func enhancedReceived(_ pdu: [UInt8], on id: BearerID, from bearer: KernelATTBearer) {
        guard let entry = enhancedATT.bearers[id], entry.bearer === bearer else { return }
        logger.trace("\(id) < \(pdu.hexString)")
        // The link's security as the fixed bearer would see it with this PDU (the monitor's
        // Encryption Change may not have landed yet).
        refreshSecurity(of: id.connection)
        // The kernel answers a Credit Based Reconfigure itself: the central's MTU may have
        // grown since the last PDU, and this one may need it.
        if let mtu = KernelEnhancedBearerPlan.reconfigured(current: entry.mtu, ourMTU: entry.ourMTU, peerMTU: bearer.sendMTU()) {
            enhancedATT.bearers[id]?.mtu = mtu
            logger.debug("\(id): the central reconfigured the channel: ATT_MTU \(mtu)")
            onEvent?(.enhancedBearer(id, .reconfigured(mtu: mtu)))
        }
        onEvent?(.received(id, pdu))
    }

    /// The central closed the channel, or its link went (EOF or an error on the socket).
    private func enhancedBearerClosed(_ id: BearerID, bearer: KernelATTBearer) {
        guard enhancedATT.bearers[id]?.bearer === bearer else { return }
        enhancedATT.bearers[id] = nil
        bearer.close()
        logger.debug("\(id): Enhanced ATT bearer closed")
        onEvent?(.enhancedBearer(id, .closed))
    }

    /// Closes the channel (the kernel sends the L2CAP Disconnection Request); the core has
    /// forgotten the bearer already, so no `.closed` follows.
    public func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Never] {
        enhancedATT.bearers.removeValue(forKey: id)?.bearer.close()
        return []
    }

    /// The link is gone (or the adapter, or gattd stops): its channels go with it. The core
    /// forgets a connection's bearers with its disconnection, so nothing is reported.
    func closeEnhancedBearers(of connection: ConnectionID?) {
        for id in enhancedATT.bearers.keys.sorted() where connection == nil || id.connection == connection {
            enhancedATT.bearers.removeValue(forKey: id)?.bearer.close()
        }
    }

    /// The adapter went or gattd stops: no listening socket, no bearer (`wanted` stays).
    func closeEnhancedATT() {
        enhancedATT.listener?.close()
        enhancedATT.listener = nil
        closeEnhancedBearers(of: nil)
    }
}

/// The kernel transport's Enhanced ATT state.
struct KernelEnhancedATTBearers {
    /// `setEnhancedATT`'s last word.
    var wanted = false
    /// The listening socket on PSM 0x0027 while `KernelEnhancedATTPlan` says so.
    var listener: KernelL2CAPListener?
    /// Why the last listen failed (logged once per message).
    var refusal: String?
    /// The open bearers.
    var bearers: [BearerID: KernelEnhancedBearer] = [:]
}

/// One Enhanced ATT bearer: an accepted EATT channel's socket.
struct KernelEnhancedBearer {
    let bearer: KernelATTBearer
    /// Our MTU on the channel (BT_RCVMTU) and the bearer's ATT_MTU as the core knows it.
    let ourMTU: Int
    var mtu: Int
    /// A PDU the socket had no room for: sent once it is writable.
    var unsent: [UInt8]?
}

/// Decides once, for whoever asks first (the daemon building its database, or the adapter's
/// open), whether the kernel supports Enhanced ATT, and logs why not once.
final class KernelEnhancedATTCheck: Sendable {
    private let decided = Mutex<KernelEnhancedATTSupport?>(nil)
    private let parameterPath: String

    init(parameterPath: String = KernelECREDParameter.path) {
        self.parameterPath = parameterPath
    }

    /// `decided`: runs once, with the answer, when it is first found (to log it).
    func support(decided report: (KernelEnhancedATTSupport) -> Void) -> KernelEnhancedATTSupport {
        decided.withLock { decided in
            if let decided { return decided }
            let support = KernelEnhancedATTSupport.decide(.read(path: parameterPath)) {
                KernelL2CAPListener.probeEnhancedCreditBased(psm: KernelEnhancedATT.psm)
            }
            decided = support
            report(support)
            return support
        }
    }
}
