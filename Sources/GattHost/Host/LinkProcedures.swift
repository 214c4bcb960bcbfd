import GattCore

/// The link layer procedures a host runs on its LE links for a program (`LinkRequest`), and
/// what each link's parameters, PHYs and data length are, as the controller reports them:
/// Connection Update (Vol 6 Part B §5.1.1, §5.1.7), PHY Update (§5.1.10), Data Length Update
/// (§5.1.9). The rules both transports share: `Host` (H4) and the kernel transport (its raw HCI
/// socket) feed it the same HCI events and send the commands it returns. Keyed by connection
/// handle; one request of each kind per link.
///
/// Invariant: a request ends with exactly one `finished` step (or `cancel`/`closed` forgets
/// it); values a link already has answer at once, with no procedure run.
public struct LinkProcedures: Sendable, Equatable {
    /// What to do.
    public enum Step: Sendable, Equatable {
        /// Send this HCI command.
        case command(HCICommand)
        /// Send an L2CAP Connection Parameter Update Request (Vol 3 Part A §4.20) on `handle`,
        /// then report its identifier with ``signalled(_:identifier:)``.
        case signal(handle: UInt16, LEConnectionParameters)
        /// The link's parameters changed: all of them, as they are now.
        case changed(handle: UInt16, LinkParameters)
        /// The request of this kind on `handle` ended.
        case finished(handle: UInt16, LinkRequestKind, LinkRequestResult)
        /// Worth a log line: a procedure the central started failed.
        case warning(String)
    }

    /// Each link's parameters, PHYs and data length as the controller reported them.
    public private(set) var links: [UInt16: LinkParameters] = [:]
    /// The connection parameter update a program asked for on each link.
    private var connectionUpdates: [UInt16: PendingConnectionUpdate] = [:]
    /// The links a program asked for new PHYs, until LE PHY Update Complete.
    private var phyUpdates: Set<UInt16> = []
    /// The links a program asked for another data length, until LE Set Data Length is answered.
    private var dataLengthRequests: Set<UInt16> = []
    /// Why no L2CAP Connection Parameter Update Request can be sent (the kernel keeps LE
    /// signalling); nil: the host sends it (`Step.signal`).
    public let signallingUnavailable: String?

    public init(signallingUnavailable: String? = nil) {
        self.signallingUnavailable = signallingUnavailable
    }

    /// connMaxTxTime's largest value, 0x4290 (Vol 6 Part B §4.5.10), as Zephyr sends it.
    public static let maximumTxTime: UInt16 = 0x4290

    /// Statuses with which the central's controller says it does not take part in the
    /// Connection Parameters Request procedure: the L2CAP request is tried instead.
    static let procedureUnsupported: Set<HCIStatus> = [.unsupportedRemoteFeature, HCIStatus(0x19), HCIStatus(0x20)]

    /// LE Set PHY for a new link: the config's `phy.preferred` (`phys`) the controller has,
    /// both ways; nil when that leaves only LE 1M, which a new link uses already.
    public static func preferredPHYCommand(_ handle: UInt16, phys: [LEPHY], leFeatures: LEFeatures) -> HCICommand? {
        let usable = phys.filter { phy in
            switch phy {
            case .le1M: true
            case .le2M: leFeatures.contains(.le2MPHY)
            case .leCoded: leFeatures.contains(.leCodedPHY)
            }
        }
        guard usable.contains(where: { $0 != .le1M }) else { return nil }
        let mask = usable.reduce(UInt8(0)) { $0 | 1 << ($1.rawValue - 1) }
        return .leSetPHY(handle: handle, allPHYs: 0, txPHYs: mask, rxPHYs: mask, phyOptions: 0)
    }

    // MARK: - Links

    /// A link opened (LE Connection Complete) with these values; `changed` reports them.
    public mutating func opened(_ handle: UInt16, _ link: LinkParameters) -> [Step] {
        links[handle] = link
        return [.changed(handle: handle, link)]
    }

    /// The link closed: its values and whatever a program asked of it are forgotten.
    public mutating func closed(_ handle: UInt16) {
        links[handle] = nil
        connectionUpdates[handle] = nil
        phyUpdates.remove(handle)
        dataLengthRequests.remove(handle)
    }

    // MARK: - Requests

    /// A program's request. LE Connection Update when our controller has the Connection
    /// Parameters Request procedure (LE features bit 1) and the command; the L2CAP request when
    /// it has not, or when the central's controller turns the procedure down as unsupported.
    /// `supports`: whether the controller lists a command.
    public mutating func request(
        _ handle: UInt16, _ request: LinkRequest, leFeatures: LEFeatures, supports: (HCICommand) -> Bool
    ) -> [Step] {
        guard let link = links[handle] else { return [.finished(handle: handle, request.kind, .refused("\(ConnectionID(handle)) is not connected"))] }
        switch request {
        case .connectionParameters(let p):
            // Nothing to change: no LE Connection Update Complete would come (§7.7.65.3).
            if let i = link.connectionInterval, let l = link.peripheralLatency, let t = link.supervisionTimeout, p.admit(interval: i, latency: l, timeout: t) {
                return [.finished(handle: handle, .connectionParameters, .accepted)]
            }
            let command = HCICommand.leConnectionUpdate(handle: handle, parameters: p, minCELength: 0, maxCELength: 0)
            guard leFeatures.contains(.connectionParametersRequestProcedure), supports(command) else {
                return signal(handle, p, why: "the controller lacks the Connection Parameters Request procedure")
            }
            connectionUpdates[handle] = .controller(p)
            return [.command(command)]
        case .phy(let tx, let rx, let coding):
            for phy in Set([tx, rx]) {
                let feature: LEFeatures? = phy == .le2M ? .le2MPHY : phy == .leCoded ? .leCodedPHY : nil
                if let feature, !leFeatures.contains(feature) {
                    return [.finished(handle: handle, .phy, .refused("the controller does not support \(phy) (its LE features lack it)"))]
                }
            }
            // The PHYs in use already (not LE Coded: its coding is not reported): no procedure to
            // run. §7.7.65.12 has the controller answer at once then, but not every one does.
            if link.txPHY == tx, link.rxPHY == rx, tx != .leCoded, rx != .leCoded {
                return [.finished(handle: handle, .phy, .accepted)]
            }
            let command = HCICommand.leSetPHY(
                handle: handle, allPHYs: 0, txPHYs: 1 << (tx.rawValue - 1), rxPHYs: 1 << (rx.rawValue - 1), phyOptions: coding.rawValue)
            guard supports(command) else { return [.finished(handle: handle, .phy, .refused("the controller does not list LE Set PHY"))] }
            phyUpdates.insert(handle)
            return [.command(command)]
        case .dataLength(let octets):
            guard leFeatures.contains(.dataPacketLengthExtension) else {
                return [.finished(handle: handle, .dataLength, .refused("the controller does not support LE Data Packet Length Extension (its LE features lack it)"))]
            }
            // The largest TX time (§7.8.33): the octets bound it on every PHY, LE Coded included.
            let command = HCICommand.leSetDataLength(handle: handle, txOctets: octets, txTime: Self.maximumTxTime)
            guard supports(command) else { return [.finished(handle: handle, .dataLength, .refused("the controller does not list LE Set Data Length"))] }
            dataLengthRequests.insert(handle)
            return [.command(command)]
        }
    }

    /// The program stopped waiting for `kind` on `handle` (its timeout): the request is
    /// forgotten, so that a late answer does not answer a later request.
    public mutating func cancel(_ handle: UInt16, _ kind: LinkRequestKind) {
        switch kind {
        case .connectionParameters: connectionUpdates[handle] = nil
        case .phy: phyUpdates.remove(handle)
        case .dataLength: dataLengthRequests.remove(handle)
        }
    }

    /// The links on which a request of `kind` waits.
    public func waiting(_ kind: LinkRequestKind) -> Set<UInt16> {
        switch kind {
        case .connectionParameters: Set(connectionUpdates.keys)
        case .phy: phyUpdates
        case .dataLength: dataLengthRequests
        }
    }

    /// The L2CAP request of a `Step.signal` went out with this identifier.
    public mutating func signalled(_ handle: UInt16, identifier: UInt8) {
        guard let pending = connectionUpdates[handle] else { return }
        connectionUpdates[handle] = .signalling(identifier: identifier, pending.parameters)
    }

    private mutating func signal(_ handle: UInt16, _ p: LEConnectionParameters, why: String) -> [Step] {
        if let unavailable = signallingUnavailable {
            connectionUpdates[handle] = nil
            return [.finished(handle: handle, .connectionParameters, .refused("\(why), and \(unavailable)"))]
        }
        connectionUpdates[handle] = .signalling(identifier: nil, p)
        return [.signal(handle: handle, p)]
    }

    // MARK: - What the controller and the central answer

    /// An LE Meta event: the link's new values first, then the answer to the request that
    /// asked for them (LE Connection Update Complete §7.7.65.3, LE Data Length Change
    /// §7.7.65.7, LE PHY Update Complete §7.7.65.12). Other subevents: nothing.
    public mutating func handle(_ event: HCILEMetaEvent) -> [Step] {
        switch event {
        case .connectionUpdateComplete(let status, let h, let interval, let latency, let timeout):
            let answered = connectionUpdateEnded(h, status: status, new: (interval, latency, timeout))
            guard status == .success else { return answered ?? procedureFailed("connection update", handle: h, status: status) }
            return updated(h, LinkParameters(connectionInterval: interval, peripheralLatency: latency, supervisionTimeout: timeout)) + (answered ?? [])
        case .phyUpdateComplete(let status, let h, let tx, let rx):
            let answered = phyUpdateEnded(h, status: status)
            guard status == .success else { return answered ?? procedureFailed("PHY update", handle: h, status: status) }
            return updated(h, LinkParameters(txPHY: LEPHY(rawValue: tx), rxPHY: LEPHY(rawValue: rx))) + (answered ?? [])
        case .dataLengthChange(let h, let txOctets, _, let rxOctets, _):
            return updated(h, LinkParameters(maxTxOctets: txOctets, maxRxOctets: rxOctets))
        default:
            return []
        }
    }

    /// Our controller answered a command of ours: LE Set Data Length's Command Complete ends
    /// its request; a failure (Command Status or Complete) ends any. Nil: no request waits on it.
    public mutating func answered(_ command: HCICommand, status: HCIStatus) -> [Step]? {
        switch command {
        case .leSetPHY(let handle, _, _, _, _):
            return status == .success ? nil : phyUpdateEnded(handle, status: status)
        case .leSetDataLength(let handle, _, _):
            guard dataLengthRequests.remove(handle) != nil else { return nil }
            let result: LinkRequestResult =
                status == .success ? .accepted
                : status == Self.unknownCommand ? .refused(Self.unknown(command)) : .refused("LE Set Data Length failed: \(status)")
            return [.finished(handle: handle, .dataLength, result)]
        case .leConnectionUpdate(let handle, _, _, _):
            guard status != .success, case .controller = connectionUpdates[handle] else { return nil }
            return connectionUpdateEnded(handle, status: status)
        default:
            return nil
        }
    }

    /// Unknown HCI Command (Vol 1 Part F §2.1): a controller that lists a feature yet lacks its
    /// command (btvirt's LE Set PHY) says so.
    static let unknownCommand = HCIStatus(0x01)

    private static func unknown(_ command: HCICommand) -> String {
        "the controller does not know \(command.name) (\(unknownCommand))"
    }

    /// The central's L2CAP Connection Parameter Update Response (Vol 3 Part A §4.21): result 1
    /// ends our request refused; result 0 waits for the update itself. Nil: not ours.
    public mutating func updateResponse(_ identifier: UInt8, result: UInt16, handle: UInt16) -> [Step]? {
        guard case .signalling(identifier, _) = connectionUpdates[handle] else { return nil }
        guard result != 0 else { return [] }
        connectionUpdates[handle] = nil
        return [.finished(handle: handle, .connectionParameters, .refused("the central rejected the L2CAP Connection Parameter Update Request (result \(result))"))]
    }

    /// The central's L2CAP Command Reject (Vol 3 Part A §4.1) of our Connection Parameter
    /// Update Request (same identifier): it does not take the command. Nil: not ours.
    public mutating func commandRejected(_ identifier: UInt8, handle: UInt16) -> [Step]? {
        guard case .signalling(identifier, _) = connectionUpdates[handle] else { return nil }
        connectionUpdates[handle] = nil
        return [.finished(handle: handle, .connectionParameters, .refused("the central rejected the command (L2CAP Command Reject of the Connection Parameter Update Request)"))]
    }

    private mutating func phyUpdateEnded(_ handle: UInt16, status: HCIStatus) -> [Step]? {
        guard phyUpdates.remove(handle) != nil else { return nil }
        let result: LinkRequestResult =
            status == .success ? .accepted
            : status == Self.unknownCommand ? .refused("the controller does not know LE Set PHY (\(status))") : .refused("the PHY update failed: \(status)")
        return [.finished(handle: handle, .phy, result)]
    }

    /// LE Connection Update was refused by our controller (Command Status) or ended (LE
    /// Connection Update Complete): the request is answered, or tried again over L2CAP.
    /// Nil when no request of ours waits on `handle`. `new`: the values of a successful
    /// update. After our LE Connection Update the update is the central's answer (Vol 6 Part B
    /// §5.1.7: it picks the values), so values outside what was asked refuse the request, naming
    /// them; after the L2CAP request an update outside them is the central's own (it may come
    /// before its response) and the request keeps waiting.
    private mutating func connectionUpdateEnded(
        _ handle: UInt16, status: HCIStatus, new: (interval: UInt16, latency: UInt16, timeout: UInt16)? = nil
    ) -> [Step]? {
        guard let pending = connectionUpdates[handle] else { return nil }
        if status == .success {
            if let new, !pending.parameters.admit(interval: new.interval, latency: new.latency, timeout: new.timeout) {
                guard case .controller = pending else { return [] }
                connectionUpdates[handle] = nil
                let chosen = "interval \(LinkParameters.milliseconds(Double(new.interval) * 1.25)) ms, latency \(new.latency), timeout \(Int(new.timeout) * 10) ms"
                return [.finished(handle: handle, .connectionParameters, .refused("the central chose other parameters (\(chosen))"))]
            }
            connectionUpdates[handle] = nil
            return [.finished(handle: handle, .connectionParameters, .accepted)]
        }
        if case .controller(let p) = pending, Self.procedureUnsupported.contains(status) {
            return signal(handle, p, why: "the central does not take part in the Connection Parameters Request procedure (\(status))")
        }
        if case .controller(let p) = pending, status == Self.unknownCommand {
            return signal(handle, p, why: "the controller does not know LE Connection Update (\(status))")
        }
        connectionUpdates[handle] = nil
        return [.finished(handle: handle, .connectionParameters, .refused("the connection update failed: \(status)"))]
    }

    private mutating func updated(_ handle: UInt16, _ update: LinkParameters) -> [Step] {
        guard let old = links[handle] else { return [] }
        let link = old.merging(update)
        guard link != old else { return [] }
        links[handle] = link
        return [.changed(handle: handle, link)]
    }

    /// A procedure on the link ended without a change (the central refused, or it timed out).
    private func procedureFailed(_ procedure: String, handle: UInt16, status: HCIStatus) -> [Step] {
        guard links[handle] != nil else { return [] }
        return [.warning("connection \(handle): \(procedure) failed: \(status)")]
    }
}
