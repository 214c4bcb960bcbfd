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
    /// client's least loaded bearer (`updateBearer(of:indication:)`, ties to the fixed bearer).
    /// Each PDU carries the value truncated to ATT_MTU-3; the full value stays
    /// readable with Read Blob. `.busy` when any targeted subscriber's queue is full:
    /// then nothing changed, and `.event(.ready)` comes later. The outputs tell the
    /// transport which connections have PDUs to pull.
    /// (`notifyMultiple` of one update, without its per-call plans: `ATTServer+NotifyOne.swift`.)
    public mutating func notify(characteristic: Int, value: [UInt8], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        notifyOne(characteristic, value, only: only, now: now)
    }

    /// Like `notify` for several characteristics at once. A connection that set the
    /// Multiple Handle Value Notifications bit of Client Supported Features gets the
    /// values it subscribed to by notification in one ATT_MULTIPLE_HANDLE_VALUE_NTF
    /// when there are at least two and they fit untruncated in ATT_MTU-1; otherwise
    /// one PDU per value. `.queued(n)` counts the clients reached (as `notify`). All or nothing.
    public mutating func notifyMultiple(_ updates: [(characteristic: Int, value: [UInt8])], only: ConnectionID? = nil, now: Duration)
        -> (result: NotifyResult, outputs: [ATTServerOutput])
    {
        outputs = []
        for (c, v) in updates {
            if let refusal = database.valueUpdateRefusal(characteristic: c, value: v, notifying: true) { return (refusal, []) }
        }
        // Plan every connection's PDUs before changing anything.
        var plans: [(id: BearerID, notifications: [[UInt8]], indications: [ATTBearer.WaitingIndication])] = []
        var full: [ConnectionID] = []
        for id in clients.keys.sorted(by: { $0.rawValue < $1.rawValue }) where only == nil || only == id {
            guard let b = clients[id] else { continue }
            let wantsIndication = updates.contains { (b.cccd[$0.characteristic] ?? 0) & 0x0002 != 0 }
            guard let bi = updateBearer(of: id, indication: wantsIndication) else { continue }
            let (bearer, mtu, updateCount) = (bearers.keys[bi], inBearer(bi) { $0.mtu }, inBearer(bi) { $0.updateCount })
            var notified: [ATTHandleValue] = []
            var indications: [ATTBearer.WaitingIndication] = []
            for (c, v) in updates {
                let ch = database.characteristics[c]
                let p = ch.properties
                let bits = b.cccd[c] ?? 0
                let indicate = bits & 0x0002 != 0 && p.canIndicate
                let notify = !indicate && bits & 0x0001 != 0 && p.canNotify
                if indicate, !p.contains(.indicateEncryptionRequired) || securityError(b, authenticated: false) == nil {
                    let pdu = ATTPDU.handleValueIndication(handle: ch.valueHandle, value: Array(v.prefix(mtu - 3)))
                    indications.append(.init(characteristic: c, bytes: pdu.bytes))
                } else if notify, !p.contains(.notifyEncryptionRequired) || securityError(b, authenticated: false) == nil {
                    notified.append(ATTHandleValue(handle: ch.valueHandle, value: v))
                }
            }
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
            let needed = notifications.count + indications.count
            guard needed > 0 else { continue }
            if updateCount + needed > configuration.maxQueuedUpdates { full.append(id) }
            plans.append((bearer, notifications, indications))
        }
        if !full.isEmpty {
            busyConnections.formUnion(full)
            readyOwed = true
            return (.busy, [])
        }
        for (c, v) in updates { database.setValue(v, at: database.characteristics[c].valueHandle) }
        var count = 0
        for plan in plans {
            for n in plan.notifications { enqueue(n, isUpdate: true, to: plan.id) }
            for i in plan.indications {
                if bearers[plan.id]?.outstandingIndication == nil {
                    bearers[plan.id]?.outstandingIndication = (i.characteristic, now + configuration.transactionTimeout)
                    enqueue(i.bytes, isUpdate: true, to: plan.id)
                } else {
                    bearers[plan.id]?.waitingIndications.append(i)
                }
            }
            count += 1
        }
        return (.queued(count), takeOutputs())
    }
}
