// One characteristic's Handle Value Notification / Indication (Core Spec Vol 3 Part F
// §3.4.7.1, §3.4.7.2): the hot path of `notify`, with the same rules as `notifyMultiple`
// of one update (which never makes a Multiple Handle Value Notification) but no plan
// arrays and no bearer copies: two passes over the clients, each changed in place
// (`bearers.values[i]` read through its getter copies the whole bearer; inout does not).

extension ATTServer {
    /// What one update sends to one bearer: a notification or an indication.
    enum UpdateKind {
        case notification, indication
    }

    /// The PDU kind characteristic `c` (`p`) sends to client `b`, if any.
    static func updateKind(_ b: inout ATTClient, characteristic c: CharacteristicIndex, properties p: CharacteristicProperties, minimumKeySize: Int) -> UpdateKind? {
        let bits = b.cccd[c] ?? 0
        if bits & 0x0002 != 0, p.canIndicate {
            return !p.contains(.indicateEncryptionRequired) || securityAllows(b, minimumKeySize) ? .indication : nil
        }
        guard bits & 0x0001 != 0, p.canNotify else { return nil }
        return !p.contains(.notifyEncryptionRequired) || securityAllows(b, minimumKeySize) ? .notification : nil
    }

    private static func securityAllows(_ b: borrowing ATTClient, _ minimumKeySize: Int) -> Bool {
        securityError(b.security, keySize: b.keySize, authenticated: false, minimumKeySize: minimumKeySize) == nil
    }

    /// `notifyMultiple([(c, value)])`: all or nothing, `.busy` when a targeted subscriber's
    /// queue is full, else the value is set and one PDU queued per subscriber.
    mutating func notifyOne(_ c: CharacteristicIndex, _ value: [UInt8], only: ConnectionID?, now: Duration) -> (result: NotifyResult, outputs: [ATTServerOutput]) {
        outputs = []
        if let refusal = database.valueUpdateRefusal(characteristic: c, value: value, notifying: true) { return (refusal, []) }
        let p = database[c].properties
        let valueHandle = database[c].valueHandle
        let minimumKeySize = configuration.minimumKeySize
        let maxQueued = configuration.maxQueuedUpdates
        // Pass 1: who gets a PDU, and is any of their queues full (then nothing changes)?
        var targets = 0
        var single: (index: Dictionary<BearerID, ATTBearer>.Index, id: BearerID, kind: UpdateKind)?
        var full = false
        var i = clients.startIndex
        while i != clients.endIndex {
            defer { i = clients.index(after: i) }
            let id = clients.keys[i]
            guard only == nil || only == id else { continue }
            guard let kind = Self.updateKind(&clients.values[i], characteristic: c, properties: p, minimumKeySize: minimumKeySize),
                let bi = updateBearer(of: id, characteristic: c, indication: kind == .indication)
            else { continue }
            targets += 1
            single = (bi, bearers.keys[bi], kind)
            if inBearer(bi, { $0.updateCount }) + 1 > maxQueued {
                busyConnections.insert(id)
                full = true
            }
        }
        if full {
            readyOwed = true
            return (.busy, [])
        }
        database.setValue(value, at: valueHandle)
        // Pass 2, in connection order: queue the PDUs.
        if targets == 1, let (i, id, kind) = single {
            // (Clients and bearers did not change since pass 1: its index and kind still hold.)
            let deadline = now + configuration.transactionTimeout
            pin(c, to: id)
            if let pdu = Self.queueUpdate(&bearers.values[i], kind, c, value, valueHandle, deadline: deadline) {
                enqueue(pdu, isUpdate: true, at: i, id)
            }
        } else if targets > 1 {
            for id in clients.keys.sorted(by: { $0.rawValue < $1.rawValue }) where only == nil || only == id {
                queueUpdate(c, value, valueHandle, properties: p, to: id, now: now)
            }
        }
        return (.queued(targets), takeOutputs())
    }

    /// Queues characteristic `c`'s notification or indication on `id` (nothing when it gets none).
    private mutating func queueUpdate(_ c: CharacteristicIndex, _ value: [UInt8], _ handle: AttributeHandle, properties p: CharacteristicProperties, to id: ConnectionID, now: Duration) {
        guard let ci = clients.index(forKey: id) else { return }
        let deadline = now + configuration.transactionTimeout
        guard let kind = Self.updateKind(&clients.values[ci], characteristic: c, properties: p, minimumKeySize: configuration.minimumKeySize),
            let i = updateBearer(of: id, characteristic: c, indication: kind == .indication)
        else { return }
        pin(c, to: bearers.keys[i])
        if let pdu = Self.queueUpdate(&bearers.values[i], kind, c, value, handle, deadline: deadline) {
            enqueue(pdu, isUpdate: true, at: i, bearers.keys[i])
        }
    }

    /// The PDU to enqueue on `b` (nil: none, or an indication that waits behind the outstanding one).
    private static func queueUpdate(_ b: inout ATTBearer, _ kind: UpdateKind, _ c: CharacteristicIndex, _ value: [UInt8], _ handle: AttributeHandle, deadline: Duration) -> [UInt8]? {
        let opcode: ATTOpcode = kind == .indication ? .handleValueIndication : .handleValueNotification
        let part = value.prefix(b.mtu - 3)
        var pdu: [UInt8] = []
        pdu.reserveCapacity(3 + part.count)
        pdu.append(opcode.rawValue)
        pdu.append(UInt8(handle.rawValue & 0xFF))
        pdu.append(UInt8(handle.rawValue >> 8))
        pdu.append(contentsOf: part)
        guard kind == .indication else { return pdu }
        guard b.outstandingIndication == nil else {
            b.waitingIndications.append(.init(characteristic: c, bytes: pdu))
            return nil
        }
        b.outstandingIndication = (c, deadline)
        return pdu
    }
}
