// Server-initiated updates: Handle Value Notification / Indication and
// Multiple Handle Value Notification (Core Spec Vol 3 Part F §3.4.7,
// Vol 3 Part G §4.10, §4.11).

extension ATTServer {
    /// Bit 2 of Client Supported Features: Multiple Handle Value Notifications (Vol 3 Part G §7.2).
    static let multipleHandleValueNotificationsFeature: UInt8 = 0x04
    /// The Client Supported Features bits the server keeps (Vol 3 Part G §7.2): Robust
    /// Caching (0), Enhanced ATT Bearer (1), Multiple Handle Value Notifications (2). Others
    /// are ignored (read back as 0).
    static let supportedClientFeatures: UInt8 = 0x07

    /// Sets a characteristic's value and queues it to every subscribed connection
    /// (or only `only`): an indication where that connection enabled indications
    /// (one outstanding per bearer, the rest wait in order), else a notification, on the
    /// bearer the characteristic's earlier updates to that client took, so they arrive in
    /// order; its first on the client's least loaded bearer (`updateBearer(of:characteristic:indication:)`).
    /// Each PDU carries the value truncated to ATT_MTU-3; the full value stays
    /// readable with Read Blob. `.busy` when any targeted subscriber's queue is full:
    /// then nothing changed, and `.event(.ready)` comes later. The outputs tell the
    /// transport which connections have PDUs to pull.
    /// (`notifyMultiple` of one update, without its per-call plans: `ATTServer+NotifyOne.swift`.)
    public mutating func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        withGATTUpdates(notifyOne(characteristic, value, only: only, now: now), [(characteristic, value)], only: only)
    }

    /// Like `notify` for several characteristics at once. A connection that set the
    /// Multiple Handle Value Notifications bit of Client Supported Features gets the
    /// values it subscribed to by notification in one ATT_MULTIPLE_HANDLE_VALUE_NTF
    /// when there are at least two and they fit untruncated in ATT_MTU-1; otherwise
    /// one PDU per value. Each value takes its characteristic's bearer (`updateBearer`): a
    /// Multiple Handle Value Notification only holds values that share one, otherwise they go
    /// one per bearer. `.queued(n)` counts the clients reached (as `notify`). All or nothing.
    public mutating func notifyMultiple(_ updates: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        withGATTUpdates(notifyMultipleOnBearers(updates, only: only, now: now), updates, only: only)
    }

    private mutating func notifyMultipleOnBearers(_ updates: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        outputs = []
        for (c, v) in updates {
            if let refusal = database.valueUpdateRefusal(characteristic: c, value: v, notifying: true) { return (refusal, []) }
        }
        // Plan every connection's PDUs before changing anything.
        var plans: [(id: BearerID, notifications: [[UInt8]], indications: [ATTBearer.WaitingIndication], pins: [CharacteristicIndex])] = []
        var full: [ConnectionID] = []
        var reached = 0
        for id in clients.keys.sorted(by: { $0.rawValue < $1.rawValue }) where only == nil || only == id {
            guard let b = clients[id] else { continue }
            // Each value this client gets, as an indication or a notification.
            var sent: [(c: CharacteristicIndex, value: [UInt8], indicate: Bool)] = []
            for (c, v) in updates {
                let p = database[c].properties
                let bits = b.cccd[c] ?? 0
                let indicate = bits & 0x0002 != 0 && p.canIndicate
                let notify = !indicate && bits & 0x0001 != 0 && p.canNotify
                if indicate, !p.contains(.indicateEncryptionRequired) || securityError(b, authenticated: false) == nil {
                    sent.append((c, v, true))
                } else if notify, !p.contains(.notifyEncryptionRequired) || securityError(b, authenticated: false) == nil {
                    sent.append((c, v, false))
                }
            }
            guard !sent.isEmpty else { continue }
            // Each value on its characteristic's bearer (`updateBearer`). Values without one
            // join the only bearer the others are on, so they can share one PDU; when the
            // others are on several, each value goes on its own.
            let pinned = Set(sent.compactMap { b.updateChannels[$0.c] })
            let shared: UInt16? = pinned.count == 1 ? pinned.first
                : pinned.isEmpty ? freeUpdateBearer(of: id, indication: sent.contains { $0.indicate }).map { bearers.keys[$0].channel } : nil
            var groups: [(channel: UInt16, values: [(c: CharacteristicIndex, value: [UInt8], indicate: Bool)])] = []
            for u in sent {
                guard let ch = b.updateChannels[u.c] ?? shared
                    ?? freeUpdateBearer(of: id, indication: u.indicate).map({ bearers.keys[$0].channel })
                else { continue }
                if let g = groups.firstIndex(where: { $0.channel == ch }) { groups[g].values.append(u) } else { groups.append((ch, [u])) }
            }
            var reachedClient = false
            for g in groups {
                let bearer = BearerID(id, channel: g.channel)
                guard let bi = bearers.index(forKey: bearer) else { continue }
                let (mtu, updateCount) = inBearer(bi) { ($0.mtu, $0.updateCount) }
                let indications = g.values.filter(\.indicate).map { u in
                    ATTBearer.WaitingIndication(characteristic: u.c, bytes: ATTPDU.handleValueIndication(
                        handle: database[u.c].valueHandle, value: Array(u.value.prefix(mtu - 3))).bytes)
                }
                let notified = g.values.filter { !$0.indicate }.map { ATTHandleValue(handle: database[$0.c].valueHandle, value: $0.value) }
                var notifications: [[UInt8]] = []
                if notified.count >= 2, (b.clientFeatures.first ?? 0) & Self.multipleHandleValueNotificationsFeature != 0,
                    case let multi = ATTPDU.multipleHandleValueNotification(notified).bytes, multi.count <= mtu
                {
                    notifications = [multi]
                } else {
                    notifications = notified.map {
                        ATTPDU.handleValueNotification(handle: $0.handle, value: Array($0.value.prefix(mtu - 3))).bytes
                    }
                }
                if updateCount + notifications.count + indications.count > configuration.maxQueuedUpdates, !full.contains(id) { full.append(id) }
                plans.append((bearer, notifications, indications, g.values.map(\.c)))
                reachedClient = true
            }
            if reachedClient { reached += 1 }
        }
        if !full.isEmpty {
            busyConnections.formUnion(full)
            readyOwed = true
            return (.busy, [])
        }
        for (c, v) in updates { database.setValue(v, at: database[c].valueHandle) }
        for plan in plans {
            for c in plan.pins { pin(c, to: plan.id) }
            for n in plan.notifications { enqueue(n, isUpdate: true, to: plan.id) }
            for i in plan.indications {
                if bearers[plan.id]?.outstandingIndication == nil {
                    bearers[plan.id]?.outstandingIndication = (i.characteristic, now + configuration.transactionTimeout)
                    enqueue(i.bytes, isUpdate: true, to: plan.id)
                } else {
                    bearers[plan.id]?.waitingIndications.append(i)
                }
            }
        }
        return (.queued(reached), takeOutputs())
    }
}
