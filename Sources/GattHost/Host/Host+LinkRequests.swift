import GattCore

/// A connection parameter update the host asked for and waits on (one per link).
enum PendingConnectionUpdate: Sendable, Equatable {
    /// HCI LE Connection Update sent as peripheral (the LL Connection Parameters Request
    /// procedure, Vol 6 Part B §5.1.7): LE Connection Update Complete ends it.
    case controller(LEConnectionParameters)
    /// L2CAP Connection Parameter Update Request sent (Vol 3 Part A §4.20) with this
    /// identifier: a rejecting response ends it, else the LE Connection Update Complete of
    /// the update the central then makes.
    case signalling(identifier: UInt8, LEConnectionParameters)

    /// What was asked for.
    var parameters: LEConnectionParameters {
        switch self {
        case .controller(let p), .signalling(_, let p): p
        }
    }
}

extension LEConnectionParameters {
    /// An interval within [min, max] and the same latency and supervision timeout: what a
    /// link with these values already gives (or an update to them answers).
    func admit(interval: UInt16, latency: UInt16, timeout: UInt16) -> Bool {
        (intervalMin...max(intervalMin, intervalMax)).contains(interval) && latency == self.latency && timeout == supervisionTimeout
    }
}

// A program's requests for one link (`requestLink`): new connection parameters.
extension Host {
    /// LE Connection Update when our controller has the Connection Parameters Request
    /// procedure (LE features bit 1) and the command; the L2CAP request when it has not, or
    /// when the central's controller turns the procedure down as unsupported.
    public mutating func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [HostOutput] {
        self.now = now
        let handle = id.rawValue
        guard connections[handle] != nil else { return [finished(id, request.kind, .refused("\(id) is not connected"))] }
        switch request {
        case .connectionParameters(let p):
            // Nothing to change: no LE Connection Update Complete would come (§7.7.65.3).
            if let link = links[handle], let i = link.connectionInterval, let l = link.peripheralLatency, let t = link.supervisionTimeout,
                p.admit(interval: i, latency: l, timeout: t)
            {
                return [finished(id, .connectionParameters, .accepted)]
            }
            let command = HCICommand.leConnectionUpdate(handle: handle, parameters: p, minCELength: 0, maxCELength: 0)
            guard controller.leFeatures.contains(.connectionParametersRequestProcedure), supports(command) else {
                return signalConnectionUpdate(handle, p)
            }
            connectionUpdates[handle] = .controller(p)
            commands.append(command)
            return pumpCommands()
        case .phy(let tx, let rx, let coding):
            for phy in Set([tx, rx]) {
                let feature: LEFeatures? = phy == .le2M ? .le2MPHY : phy == .leCoded ? .leCodedPHY : nil
                if let feature, !controller.leFeatures.contains(feature) {
                    return [finished(id, .phy, .refused("the controller does not support \(phy) (its LE features lack it)"))]
                }
            }
            // The PHYs in use already (not LE Coded: its coding is not reported): no procedure to
            // run. §7.7.65.12 has the controller answer at once then, but not every one does.
            if let link = links[handle], link.txPHY == tx, link.rxPHY == rx, tx != .leCoded, rx != .leCoded {
                return [finished(id, .phy, .accepted)]
            }
            let command = HCICommand.leSetPHY(
                handle: handle, allPHYs: 0, txPHYs: 1 << (tx.rawValue - 1), rxPHYs: 1 << (rx.rawValue - 1), phyOptions: coding.rawValue)
            guard supports(command) else { return [finished(id, .phy, .refused("the controller does not list LE Set PHY"))] }
            phyUpdates.insert(handle)
            commands.append(command)
            return pumpCommands()
        case .dataLength(let octets):
            guard controller.leFeatures.contains(.dataPacketLengthExtension) else {
                return [finished(id, .dataLength, .refused("the controller does not support LE Data Packet Length Extension (its LE features lack it)"))]
            }
            // The largest TX time (17040 µs, §7.8.33): the octets bound it on every PHY, LE Coded included.
            let command = HCICommand.leSetDataLength(handle: handle, txOctets: octets, txTime: Self.maximumTxTime)
            guard supports(command) else { return [finished(id, .dataLength, .refused("the controller does not list LE Set Data Length"))] }
            dataLengthRequests.insert(handle)
            commands.append(command)
            return pumpCommands()
        }
    }

    /// LE Set Data Length answered (Command Complete, §7.8.33): the request is answered (any
    /// change follows as LE Data Length Change). Nil: none waits.
    mutating func dataLengthSet(_ handle: UInt16, status: HCIStatus) -> [HostOutput]? {
        guard dataLengthRequests.remove(handle) != nil else { return nil }
        let result: LinkRequestResult = status == .success ? .accepted : .refused("LE Set Data Length failed: \(status)")
        return [finished(ConnectionID(handle), .dataLength, result)]
    }

    /// LE Set PHY refused by our controller (Command Status) or LE PHY Update Complete
    /// (§7.7.65.12, sent even when nothing changed): the request is answered. Nil: none waits.
    mutating func phyUpdateEnded(_ handle: UInt16, status: HCIStatus) -> [HostOutput]? {
        guard phyUpdates.remove(handle) != nil else { return nil }
        let result: LinkRequestResult = status == .success ? .accepted : .refused("the PHY update failed: \(status)")
        return [finished(ConnectionID(handle), .phy, result)]
    }

    /// connMaxTxTime's largest value, 0x4290 (Vol 6 Part B §4.5.10), as Zephyr sends it.
    static let maximumTxTime: UInt16 = 0x4290

    private mutating func signalConnectionUpdate(_ handle: UInt16, _ p: LEConnectionParameters) -> [HostOutput] {
        let identifier = nextSignallingIdentifier()
        connectionUpdates[handle] = .signalling(identifier: identifier, p)
        acl.queue(frame: LESignallingPDU(identifier: identifier, command: .connectionParameterUpdateRequest(p)).frame, on: handle)
        return pumpACL()
    }

    private func finished(_ id: ConnectionID, _ kind: LinkRequestKind, _ result: LinkRequestResult) -> HostOutput {
        .event(.transport(.linkRequestFinished(id, kind, result)))
    }

    /// Statuses with which the central's controller says it does not take part in the
    /// Connection Parameters Request procedure: the L2CAP request is tried instead.
    static let procedureUnsupported: Set<HCIStatus> = [.unsupportedRemoteFeature, HCIStatus(0x19), HCIStatus(0x20)]

    /// LE Connection Update was refused by our controller (Command Status) or ended (LE
    /// Connection Update Complete): the request is answered, or tried again over L2CAP.
    /// Nil when no request of ours waits on `handle`. `new`: the values of a successful
    /// update. After our LE Connection Update the update is the central's answer (Vol 6 Part B
    /// §5.1.7: it picks the values), so values outside what was asked refuse the request, naming
    /// them; after the L2CAP request an update outside them is the central's own (it may come
    /// before its response) and the request keeps waiting.
    mutating func connectionUpdateEnded(
        _ handle: UInt16, status: HCIStatus, new: (interval: UInt16, latency: UInt16, timeout: UInt16)? = nil
    ) -> [HostOutput]? {
        guard let pending = connectionUpdates[handle] else { return nil }
        if status == .success {
            if let new, !pending.parameters.admit(interval: new.interval, latency: new.latency, timeout: new.timeout) {
                guard case .controller = pending else { return [] }
                connectionUpdates[handle] = nil
                let chosen = "interval \(LinkParameters.milliseconds(Double(new.interval) * 1.25)) ms, latency \(new.latency), timeout \(Int(new.timeout) * 10) ms"
                return [finished(ConnectionID(handle), .connectionParameters, .refused("the central chose other parameters (\(chosen))"))]
            }
            connectionUpdates[handle] = nil
            return [finished(ConnectionID(handle), .connectionParameters, .accepted)]
        }
        if case .controller(let p) = pending, Self.procedureUnsupported.contains(status) {
            return signalConnectionUpdate(handle, p)
        }
        connectionUpdates[handle] = nil
        return [finished(ConnectionID(handle), .connectionParameters, .refused("the connection update failed: \(status)"))]
    }

    /// Our controller refused LE Connection Update (Command Status); nil: not ours.
    mutating func connectionUpdateCommandFailed(_ command: HCICommand, status: HCIStatus) -> [HostOutput]? {
        if case .leSetPHY(let handle, _, _, _, _) = command { return phyUpdateEnded(handle, status: status) }
        if case .leSetDataLength(let handle, _, _) = command { return dataLengthSet(handle, status: status) }
        guard case .leConnectionUpdate(let handle, _, _, _) = command, case .controller = connectionUpdates[handle] else { return nil }
        return connectionUpdateEnded(handle, status: status)
    }

    /// The central's L2CAP Connection Parameter Update Response (Vol 3 Part A §4.21): result 1
    /// ends our request refused; result 0 waits for the update itself. Nil: not ours.
    mutating func connectionParameterUpdateResponse(_ identifier: UInt8, result: UInt16, handle: UInt16) -> [HostOutput]? {
        guard case .signalling(identifier, _) = connectionUpdates[handle] else { return nil }
        guard result != 0 else { return [] }
        connectionUpdates[handle] = nil
        return [finished(ConnectionID(handle), .connectionParameters, .refused("the central rejected the L2CAP Connection Parameter Update Request (result \(result))"))]
    }

    /// The central's L2CAP Command Reject (Vol 3 Part A §4.1) of our Connection Parameter
    /// Update Request (same identifier): it does not take the command. Nil: not ours.
    mutating func signallingCommandRejected(_ identifier: UInt8, handle: UInt16) -> [HostOutput]? {
        guard case .signalling(identifier, _) = connectionUpdates[handle] else { return nil }
        connectionUpdates[handle] = nil
        return [finished(ConnectionID(handle), .connectionParameters, .refused("the central rejected the command (L2CAP Command Reject of the Connection Parameter Update Request)"))]
    }

    /// The program stopped waiting for `kind` on `id` (its timeout): the request is forgotten,
    /// so that a late answer does not answer a later request.
    public mutating func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [HostOutput] {
        self.now = now
        switch kind {
        case .connectionParameters: connectionUpdates[id.rawValue] = nil
        case .phy: phyUpdates.remove(id.rawValue)
        case .dataLength: dataLengthRequests.remove(id.rawValue)
        }
        return []
    }

    /// LE Set PHY for a new link: the config's `phy.preferred` the controller has (LE 2M by
    /// default), both ways; nil when that leaves only LE 1M, which a new link uses already.
    func preferredPHYRequest(_ handle: UInt16) -> HCICommand? {
        let usable = configuration.advertising.connectionPHYs.filter { phy in
            switch phy {
            case .le1M: true
            case .le2M: controller.leFeatures.contains(.le2MPHY)
            case .leCoded: controller.leFeatures.contains(.leCodedPHY)
            }
        }
        guard usable.contains(where: { $0 != .le1M }) else { return nil }
        let mask = usable.reduce(UInt8(0)) { $0 | 1 << ($1.rawValue - 1) }
        return .leSetPHY(handle: handle, allPHYs: 0, txPHYs: mask, rxPHYs: mask, phyOptions: 0)
    }
}
