/// The fan-out of a new characteristic value to the clients (Core Spec Vol 3 Part F §3.4.7
/// server initiated PDUs, Vol 3 Part G §4.10, §4.11): Handle Value Notification or Indication,
/// or Multiple Handle Value Notification, over the clients' states (who receives it:
/// `ATTClient.updateKind`, one rule for both entry points) and the bearer table (which bearer
/// carries it, and whether its queue has room). All or nothing: `.busy` when a targeted
/// subscriber's queue is full, and then nothing changed.
///
/// Each PDU carries the value truncated to ATT_MTU-3 (the full value stays readable with Read
/// Blob). An indication is outstanding one at a time per bearer, the rest wait in order.
struct ServerInitiatedUpdates {
    let minimumKeySize: Int
    /// Notifications/indications each bearer may hold not yet pulled.
    let maxQueuedUpdates: Int
    /// The deadline of an indication that goes out (§3.3.3).
    let transactionTimeout: Duration

    init(_ configuration: ATTServerConfiguration) {
        minimumKeySize = configuration.minimumKeySize
        maxQueuedUpdates = configuration.maxQueuedUpdates
        transactionTimeout = configuration.transactionTimeout
    }

    /// One characteristic's update: `notifyMultiple([(c, value)])` (which never makes a
    /// Multiple Handle Value Notification) without its plan arrays and bearer copies: two
    /// passes over the clients, each changed in place (a client or bearer read through its
    /// dictionary's getter is a copy of its tables and queues; inout is not).
    func notify(
        _ c: CharacteristicIndex, _ value: [UInt8], only: ConnectionID?, now: Duration,
        database: inout GATTDatabase, clients: inout [ConnectionID: ATTClient], bearers: inout ATTBearers, outputs: inout [ATTServerOutput]
    ) -> NotifyResult {
        if let refusal = database.valueUpdateRefusal(characteristic: c, value: value, notifying: true) { return refusal }
        let p = database[c].properties
        let valueHandle = database[c].valueHandle
        // Pass 1: who gets a PDU, and is any of their queues full (then nothing changes)?
        var targets = 0
        var single: (index: ATTBearers.Index, id: BearerID, kind: ATTClient.UpdateKind)?
        var full = false
        var i = clients.startIndex
        while i != clients.endIndex {
            defer { i = clients.index(after: i) }
            let id = clients.keys[i]
            guard only == nil || only == id else { continue }
            guard let kind = ATTClient.updateKind(&clients.values[i], characteristic: c, properties: p, minimumKeySize: minimumKeySize),
                let bi = bearers.updateBearer(of: id, characteristic: c, indication: kind == .indication)
            else { continue }
            targets += 1
            single = (bi, bearers.id(at: bi), kind)
            if bearers.load(at: bi).updateCount + 1 > maxQueuedUpdates {
                bearers.markBusy(id)
                full = true
            }
        }
        if full { return .busy }
        database.setValue(value, at: valueHandle)
        // Pass 2, in connection order: queue the PDUs.
        let deadline = now + transactionTimeout
        if targets == 1, let (bi, id, kind) = single {
            // (Clients and bearers did not change since pass 1: its index and kind still hold.)
            queue(value, of: c, valueHandle, kind, at: bi, id, deadline: deadline, bearers: &bearers, outputs: &outputs)
        } else if targets > 1 {
            for id in clients.keys.sorted(by: { $0.rawValue < $1.rawValue }) where only == nil || only == id {
                guard let ci = clients.index(forKey: id),
                    let kind = ATTClient.updateKind(&clients.values[ci], characteristic: c, properties: p, minimumKeySize: minimumKeySize),
                    let bi = bearers.updateBearer(of: id, characteristic: c, indication: kind == .indication)
                else { continue }
                queue(value, of: c, valueHandle, kind, at: bi, bearers.id(at: bi), deadline: deadline, bearers: &bearers, outputs: &outputs)
            }
        }
        return .queued(targets)
    }

    /// Queues characteristic `c`'s notification or indication on the bearer at `bi`.
    private func queue(
        _ value: [UInt8], of c: CharacteristicIndex, _ handle: AttributeHandle, _ kind: ATTClient.UpdateKind, at bi: ATTBearers.Index, _ id: BearerID,
        deadline: Duration, bearers: inout ATTBearers, outputs: inout [ATTServerOutput]
    ) {
        let indication = kind == .indication
        let pdu = ATTPDU.handleValue(indication: indication, handle: handle, value: value.prefix(bearers.mtu(at: bi) - 3))
        bearers.queueUpdate(pdu, indication: indication, of: c, at: bi, id, deadline: deadline, into: &outputs)
    }

    /// Several characteristics at once. A client that set the Multiple Handle Value
    /// Notifications bit of Client Supported Features gets the values it subscribed to by
    /// notification in one ATT_MULTIPLE_HANDLE_VALUE_NTF when there are at least two and they
    /// fit untruncated in ATT_MTU-1; otherwise one PDU per value. Each value takes its
    /// characteristic's bearer (`ATTBearers.updateBearer`): a Multiple Handle Value Notification
    /// only holds values that share one, otherwise they go one per bearer. `.queued(n)` counts
    /// the clients reached.
    func notifyMultiple(
        _ updates: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?, now: Duration,
        database: inout GATTDatabase, clients: inout [ConnectionID: ATTClient], bearers: inout ATTBearers, outputs: inout [ATTServerOutput]
    ) -> NotifyResult {
        for (c, v) in updates {
            if let refusal = database.valueUpdateRefusal(characteristic: c, value: v, notifying: true) { return refusal }
        }
        // Plan every connection's PDUs before changing anything.
        var plans: [(id: BearerID, notifications: [[UInt8]], indications: [ATTBearer.WaitingIndication], pins: [CharacteristicIndex])] = []
        var full: [ConnectionID] = []
        var reached = 0
        for id in clients.keys.sorted(by: { $0.rawValue < $1.rawValue }) where only == nil || only == id {
            guard let ci = clients.index(forKey: id) else { continue }
            // Each value this client gets, as an indication or a notification.
            var sent: [(c: CharacteristicIndex, value: [UInt8], indicate: Bool)] = []
            for (c, v) in updates {
                guard let kind = ATTClient.updateKind(&clients.values[ci], characteristic: c, properties: database[c].properties, minimumKeySize: minimumKeySize) else { continue }
                sent.append((c, v, kind == .indication))
            }
            guard !sent.isEmpty else { continue }
            // Each value on its characteristic's bearer (`updateBearer`). Values without one
            // join the only bearer the others are on, so they can share one PDU; when the
            // others are on several, each value goes on its own.
            let pinned = Set(sent.compactMap { bearers.updateChannel(of: id, characteristic: $0.c) })
            let shared: UInt16? = pinned.count == 1 ? pinned.first
                : pinned.isEmpty ? bearers.freeUpdateBearer(of: id, indication: sent.contains { $0.indicate }).map { bearers.id(at: $0).channel } : nil
            var groups: [(channel: UInt16, values: [(c: CharacteristicIndex, value: [UInt8], indicate: Bool)])] = []
            for u in sent {
                guard let ch = bearers.updateChannel(of: id, characteristic: u.c) ?? shared
                    ?? bearers.freeUpdateBearer(of: id, indication: u.indicate).map({ bearers.id(at: $0).channel })
                else { continue }
                if let g = groups.firstIndex(where: { $0.channel == ch }) { groups[g].values.append(u) } else { groups.append((ch, [u])) }
            }
            let multiple = clients.values[ci].takesMultipleHandleValueNotifications
            var reachedClient = false
            for g in groups {
                let bearer = BearerID(id, channel: g.channel)
                guard let bi = bearers.index(of: bearer) else { continue }
                let (mtu, updateCount) = bearers.load(at: bi)
                let indications = g.values.filter(\.indicate).map { u in
                    ATTBearer.WaitingIndication(characteristic: u.c, bytes: ATTPDU.handleValue(
                        indication: true, handle: database[u.c].valueHandle, value: u.value.prefix(mtu - 3)))
                }
                let notified = g.values.filter { !$0.indicate }.map { ATTHandleValue(handle: database[$0.c].valueHandle, value: $0.value) }
                var notifications: [[UInt8]] = []
                if notified.count >= 2, multiple, case let multi = ATTPDU.multipleHandleValueNotification(notified).bytes, multi.count <= mtu {
                    notifications = [multi]
                } else {
                    notifications = notified.map { ATTPDU.handleValue(indication: false, handle: $0.handle, value: $0.value.prefix(mtu - 3)) }
                }
                if updateCount + notifications.count + indications.count > maxQueuedUpdates, !full.contains(id) { full.append(id) }
                plans.append((bearer, notifications, indications, g.values.map(\.c)))
                reachedClient = true
            }
            if reachedClient { reached += 1 }
        }
        if !full.isEmpty {
            for id in full { bearers.markBusy(id) }
            return .busy
        }
        for (c, v) in updates { database.setValue(v, at: database[c].valueHandle) }
        let deadline = now + transactionTimeout
        for plan in plans {
            for c in plan.pins { bearers.pin(c, to: plan.id) }
            for n in plan.notifications { bearers.enqueue(n, isUpdate: true, to: plan.id, into: &outputs) }
            guard let bi = bearers.index(of: plan.id) else { continue }
            for i in plan.indications {
                bearers.queueUpdate(i.bytes, indication: true, of: i.characteristic, at: bi, plan.id, deadline: deadline, into: &outputs)
            }
        }
        return .queued(reached)
    }
}
