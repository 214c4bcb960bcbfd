// Write requests and commands, Prepare/Execute Write, Handle Value Confirmation
// (Core Spec Vol 3 Part F §3.4.5, §3.4.6, §3.4.7).

extension ATTServer {
    enum WriteKind { case request, command, signed, prepare }

    /// Write permission of an attribute on this bearer; characteristic values also
    /// need the property of the write procedure used.
    func writeError(_ a: Attribute, _ b: ATTClient, _ kind: WriteKind) -> ATTError? {
        guard a.permissions.canWrite else { return .writeNotPermitted }
        if case .characteristicValue(let c) = a.role {
            let p = database[c].properties
            let allowed: Bool
            switch kind {
            case .request: allowed = p.contains(.write)
            case .command: allowed = p.contains(.writeWithoutResponse)
            case .signed: allowed = p.contains(.authenticatedSignedWrites)
            case .prepare: allowed = !p.isDisjoint(with: [.write, .reliableWrite])
            }
            guard allowed else { return .writeNotPermitted }
        }
        let authenticated = a.permissions.contains(.writeAuthenticationRequired)
        guard authenticated || a.permissions.contains(.writeEncryptionRequired) else { return nil }
        return securityError(b, authenticated: authenticated)
    }

    /// The characteristic index when `a` is the value of a `.deferred` characteristic.
    func deferredCharacteristic(_ a: Attribute) -> CharacteristicIndex? {
        guard case .characteristicValue(let c) = a.role, database[c].valueSource == .deferred else { return nil }
        return c
    }

    /// Checks a complete new value before it is stored.
    func validateValue(_ a: Attribute, _ v: [UInt8], _ b: ATTClient) -> ATTError? {
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            guard v.count == 2 else { return .invalidAttributeValueLength }
            let bits = UInt16(v[0]) | UInt16(v[1]) << 8
            guard bits & ~0x0003 == 0 else { return .valueNotAllowed }
            let p = database[c].properties
            let notify = bits & 0x0001 != 0, indicate = bits & 0x0002 != 0
            if notify && !p.canNotify || indicate && !p.canIndicate { return .cccdImproperlyConfigured }
            if notify && p.contains(.notifyEncryptionRequired) || indicate && p.contains(.indicateEncryptionRequired) {
                return securityError(b, authenticated: false)
            }
            return nil
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            guard v.count <= a.maxLength else { return .invalidAttributeValueLength }
            // Bits may not be cleared once set (Vol 3 Part G §7.2).
            for (i, old) in b.clientFeatures.enumerated() where old & ~(i < v.count ? v[i] : 0) != 0 {
                return .valueNotAllowed
            }
            return nil
        default:
            return v.count <= a.maxLength ? nil : .invalidAttributeValueLength
        }
    }

    /// Stores a validated value and emits the event that goes with it.
    mutating func applyWrite(_ h: AttributeHandle, _ v: [UInt8], _ bearer: BearerID) {
        let id = bearer.connection
        guard let a = database.attribute(at: h), let b = clients[id] else { return }
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            let bits = v.count == 2 ? UInt16(v[0]) | UInt16(v[1]) << 8 : 0
            let old = b.cccd[c] ?? 0
            clients[id]?.cccd[c] = bits
            if old != bits {
                emit(.subscriptionChanged(id, characteristic: c, notify: bits & 1 != 0, indicate: bits & 2 != 0))
            }
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            var f = b.clientFeatures
            for (i, byte) in v.enumerated().prefix(1) {
                if i < f.count { f[i] |= byte & Self.supportedClientFeatures } else { f.append(byte & Self.supportedClientFeatures) }
            }
            clients[id]?.clientFeatures = f
            if f != b.clientFeatures { emit(.clientFeaturesChanged(id, features: f)) }
        case .characteristicValue(let c):
            database.setValue(v, at: h)
            emit(.written(id, characteristic: c, value: v))
        default:
            database.setValue(v, at: h)
            emit(.descriptorWritten(id, handle: h, value: v))
        }
    }

    // MARK: Write Request (§3.4.5.1)

    mutating func writeRequest(_ h: AttributeHandle, _ v: [UInt8], _ id: BearerID, now: Duration) {
        guard let b = clients[id.connection] else { return }
        guard let a = database.attribute(at: h) else { return sendError(.writeRequest, h, .invalidHandle, to: id) }
        if let err = writeError(a, b, .request) { return sendError(.writeRequest, h, err, to: id) }
        if let c = deferredCharacteristic(a) {
            guard v.count <= a.maxLength else { return sendError(.writeRequest, h, .invalidAttributeValueLength, to: id) }
            guard deferredAccessAvailable else { return sendError(.writeRequest, h, .writeRequestRejected, to: id) }
            let rid = startPending(.write, handle: h, waiting: [h], id, now: now)
            emit(.deferredAccess(id: rid[0], id.connection, .write(characteristic: c, value: v, offset: 0)))
            return
        }
        if let err = validateValue(a, v, b) { return sendError(.writeRequest, h, err, to: id) }
        finishWrites([(h, v)], .writeRequest, id, now: now)
    }

    /// Applies validated writes and answers `op` (Write Request or Execute Write): at once,
    /// or, when they change `.persisted` values or a bonded client's state, once one
    /// `DeferredAccess.commit` of all of it succeeded (`respond(to:result:now:)`).
    mutating func finishWrites(_ writes: [(AttributeHandle, [UInt8])], _ op: ATTOpcode, _ id: BearerID, now: Duration) {
        var values: [PersistedValue] = []
        var firstHandle: AttributeHandle?
        for (h, v) in writes {
            guard let a = database.attribute(at: h), case .characteristicValue(let c) = a.role,
                database[c].valueSource == .persisted
            else { continue }
            values.append(PersistedValue(characteristic: c, value: v))
            firstHandle = firstHandle ?? h
        }
        let bonded = bondedClientState(after: writes, id)  // Vol 3 Part G §3.3.3.3
        guard let handle = firstHandle ?? bonded?.handle else {
            for (h, v) in writes { applyWrite(h, v, id) }
            return send(op == .writeRequest ? .writeResponse : .executeWriteResponse, to: id)
        }
        let rid = startPending(.commit(op, writes: writes), handle: handle, waiting: [handle], id, now: now)
        emit(.deferredAccess(id: rid[0], id.connection, .commit(values: values, clientState: bonded?.state)))
    }

    // MARK: Write Command / Signed Write Command (§3.4.5.3, §3.4.5.4): never answered

    mutating func writeCommand(_ h: AttributeHandle, _ v: [UInt8], signed: Bool, _ id: BearerID) {
        guard let b = clients[id.connection], let a = database.attribute(at: h),
            writeError(a, b, signed ? .signed : .command) == nil
        else { return }
        if let c = deferredCharacteristic(a) {
            guard v.count <= a.maxLength, deferredAccessAvailable else { return }
            emit(.writeCommand(id.connection, characteristic: c, value: v))
            return
        }
        guard validateValue(a, v, b) == nil else { return }
        applyWrite(h, v, id)
    }

    /// Verifies the Authentication Signature with the connection's CSRK; the Sign
    /// Counter must exceed the last accepted one (Vol 3 Part C §10.4.2). On failure
    /// the PDU is ignored.
    mutating func verifySignedWrite(_ pdu: [UInt8], signature: [UInt8], _ id: BearerID) -> Bool {
        guard let b = clients[id.connection], let key = b.csrk, signature.count == 12, pdu.count >= 15 else { return false }
        let counter = UInt32(signature[0]) | UInt32(signature[1]) << 8 | UInt32(signature[2]) << 16 | UInt32(signature[3]) << 24
        if let last = b.lastSignCounter, counter <= last { return false }
        guard ATTSigning.signature(csrk: key, message: Array(pdu.dropLast(12)), signCounter: counter) == signature else {
            return false
        }
        clients[id.connection]?.lastSignCounter = counter
        return true
    }

    // MARK: Prepare Write (§3.4.6.1)

    mutating func prepareWrite(_ h: AttributeHandle, _ offset: Int, _ v: [UInt8], _ id: BearerID) {
        guard let b = clients[id.connection] else { return }
        guard let a = database.attribute(at: h) else { return sendError(.prepareWriteRequest, h, .invalidHandle, to: id) }
        if let err = writeError(a, b, .prepare) { return sendError(.prepareWriteRequest, h, err, to: id) }
        if deferredCharacteristic(a) != nil, !deferredAccessAvailable {
            return sendError(.prepareWriteRequest, h, .writeRequestRejected, to: id)
        }
        var handles = Set(b.prepareQueue.map(\.handle))
        handles.insert(h)
        if handles.count > 1, !handles.allSatisfy(isReliableWritable) {
            return sendError(.prepareWriteRequest, h, .writeNotPermitted, to: id)
        }
        guard b.prepareQueue.count < configuration.maxPreparedWrites,
            b.preparedBytes + v.count <= configuration.maxPreparedBytes
        else { return sendError(.prepareWriteRequest, h, .prepareQueueFull, to: id) }
        clients[id.connection]?.prepareQueue.append(.init(handle: h, offset: offset, value: v))
        clients[id.connection]?.preparedBytes += v.count
        send(.prepareWriteResponse(handle: h, offset: UInt16(offset), value: v), to: id)
    }

    /// A value of a characteristic with the Reliable Write extended property.
    func isReliableWritable(_ h: AttributeHandle) -> Bool {
        guard let a = database.attribute(at: h), case .characteristicValue(let c) = a.role else { return false }
        return database[c].properties.contains(.reliableWrite)
    }

    // MARK: Execute Write (§3.4.6.3)

    mutating func executeWrite(_ flags: UInt8, _ id: BearerID, now: Duration) {
        guard let b = clients[id.connection] else { return }
        guard flags <= 0x01 else { return sendError(.executeWriteRequest, 0, .invalidPDU, to: id) }
        let queue = b.prepareQueue
        clients[id.connection]?.prepareQueue = []
        clients[id.connection]?.preparedBytes = 0
        if flags == 0x00 || queue.isEmpty { return send(.executeWriteResponse, to: id) }

        var order: [AttributeHandle] = []
        for w in queue where !order.contains(w.handle) { order.append(w.handle) }
        var storedWrites: [(AttributeHandle, [UInt8])] = []
        var deferredWrites: [(characteristic: CharacteristicIndex, handle: AttributeHandle, offset: Int, value: [UInt8])] = []
        for h in order {
            let parts = queue.filter { $0.handle == h }
            guard let a = database.attribute(at: h), let firstOffset = parts.first?.offset else {
                return sendError(.executeWriteRequest, h, .invalidHandle, to: id)
            }
            if let c = deferredCharacteristic(a) {
                // The answerer owns the value: parts must follow each other.
                var value: [UInt8] = []
                for p in parts {
                    guard p.offset == firstOffset + value.count else {
                        return sendError(.executeWriteRequest, h, .invalidOffset, to: id)
                    }
                    value += p.value
                }
                guard firstOffset + value.count <= a.maxLength else {
                    return sendError(.executeWriteRequest, h, .invalidAttributeValueLength, to: id)
                }
                guard deferredAccessAvailable else {
                    return sendError(.executeWriteRequest, h, .writeRequestRejected, to: id)
                }
                deferredWrites.append((c, h, firstOffset, value))
            } else {
                var v = currentValue(a, b)
                for p in parts {
                    guard p.offset <= v.count else { return sendError(.executeWriteRequest, h, .invalidOffset, to: id) }
                    v = Array(v.prefix(p.offset)) + p.value
                    guard v.count <= a.maxLength else {
                        return sendError(.executeWriteRequest, h, .invalidAttributeValueLength, to: id)
                    }
                }
                if let err = validateValue(a, v, b) { return sendError(.executeWriteRequest, h, err, to: id) }
                storedWrites.append((h, v))
            }
        }
        if deferredWrites.isEmpty { return finishWrites(storedWrites, .executeWriteRequest, id, now: now) }
        let rids = startPending(
            .execute(storedWrites: storedWrites), handle: deferredWrites[0].handle,
            waiting: deferredWrites.map(\.handle), id, now: now)
        for (rid, w) in zip(rids, deferredWrites) {
            emit(.deferredAccess(id: rid, id.connection, .write(characteristic: w.characteristic, value: w.value, offset: w.offset)))
        }
    }

    // MARK: Handle Value Confirmation (§3.4.7.3)

    mutating func handleConfirmation(_ id: BearerID, now: Duration) {
        guard var b = bearers[id], let o = b.outstandingIndication else { return }
        emit(.indicationConfirmed(id.connection, characteristic: o.characteristic))
        b.outstandingIndication = nil
        defer { if o.characteristic == GATTDatabase.BuiltIn.serviceChanged.index { serviceChangedConfirmed(id) } }
        if let next = b.waitingIndications.popFirst() {
            b.outstandingIndication = (next.characteristic, now + configuration.transactionTimeout)
            bearers[id] = b
            enqueue(next.bytes, isUpdate: true, to: id)
        } else {
            bearers[id] = b
        }
    }
}
