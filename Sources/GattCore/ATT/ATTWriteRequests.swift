/// The write requests and commands, Prepare and Execute Write (Core Spec Vol 3 Part F §3.4.5,
/// §3.4.6): each over the database and the writing client's state (changed in place), with
/// the events a write emits appended to `outputs`, and the answer returned for `ATTServer` to
/// send.
///
/// Decisions where the specification leaves room:
/// - CCCD writes: length ≠ 2 → 0x0D; reserved bits (above 0x0003) → Value Not Allowed
///   (0x13, as Zephyr); a bit the characteristic does not support → CCCD Improperly
///   Configured (0xFD, as BlueZ). Enabling notify/indicate of an `*_encryption_required`
///   characteristic on an unencrypted link → 0x0F.
/// - Client Supported Features: per client; clearing a set bit → Value Not Allowed.
/// - Writes at an offset replace the value from the offset to its end.
/// - Prepare queue: at most `maxPreparedWrites` entries and `maxPreparedBytes` value
///   octets (Prepare Queue Full). Several handles in one queue are allowed only when every
///   one is a value of a characteristic with `reliable_write`; otherwise the Prepare Write
///   that adds the second handle gets Write Not Permitted (0x03). Offsets and lengths are
///   checked at Execute Write, all-or-nothing; the queue is cleared after any Execute.
/// - `.deferred` values: with `deferredAccessAvailable == false`, writes get Write Request
///   Rejected (0xFC); Write Commands are dropped. Prepared writes of a deferred value must
///   be contiguous and become one `DeferredAccess.write` at Execute Write.
/// - A Write Request or Execute Write that changes `.persisted` values or a bonded
///   client's state is answered after one `DeferredAccess.commit` carrying all of it; Write
///   Commands and Signed Writes are never held (stored at once, best effort).
struct ATTWriteRequests {
    let rules: AttributeAccessRules
    /// Whether writes of `.deferred` values can be handed out now.
    let deferredAccessAvailable: Bool
    /// Prepare Write queue limits per client.
    let maxPreparedWrites: Int
    let maxPreparedBytes: Int

    init(rules: AttributeAccessRules, deferredAccessAvailable: Bool, _ configuration: ATTServerConfiguration) {
        self.rules = rules
        self.deferredAccessAvailable = deferredAccessAvailable
        maxPreparedWrites = configuration.maxPreparedWrites
        maxPreparedBytes = configuration.maxPreparedBytes
    }

    /// The answer to a write request or command of client `b` (`id`; `bytes`: the PDU as it
    /// came, for a signature); nil for any other PDU.
    func answer(_ pdu: ATTPDU, _ bytes: [UInt8], database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> ATTRequestOutcome? {
        switch pdu {
        case .writeRequest(let h, let value): writeRequest(h, value, database: &database, client: &b, id, outputs: &outputs)
        case .writeCommand(let h, let value): writeCommand(h, value, signed: false, database: &database, client: &b, id, outputs: &outputs)
        case .signedWriteCommand(let h, let value, let signature):
            Self.verifySignedWrite(bytes, signature: signature, client: &b)
                ? writeCommand(h, value, signed: true, database: &database, client: &b, id, outputs: &outputs) : ATTRequestOutcome.none
        case .prepareWriteRequest(let h, let offset, let value): prepareWrite(h, Int(offset), value, in: database, client: &b)
        case .executeWriteRequest(let flags): executeWrite(flags, database: &database, client: &b, id, outputs: &outputs)
        default: nil
        }
    }

    // MARK: Write Request (§3.4.5.1)

    func writeRequest(_ h: AttributeHandle, _ v: [UInt8], database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> ATTRequestOutcome {
        guard let a = database.attribute(at: h) else { return .error(.writeRequest, h, .invalidHandle) }
        if let err = rules.writeError(a, b, .request, in: database) { return .error(.writeRequest, h, err) }
        if let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
            guard v.count <= a.maxLength else { return .error(.writeRequest, h, .invalidAttributeValueLength) }
            guard deferredAccessAvailable else { return .error(.writeRequest, h, .writeRequestRejected) }
            return .wait(.write, handle: h, accesses: [(h, .write(characteristic: c, value: v, offset: 0))])
        }
        if let err = rules.validateValue(a, v, b, in: database) { return .error(.writeRequest, h, err) }
        return finish([(h, v)], .writeRequest, database: &database, client: &b, id, outputs: &outputs)
    }

    /// Applies validated writes and answers `op` (Write Request or Execute Write): at once,
    /// or, when they change `.persisted` values or a bonded client's state, once one
    /// `DeferredAccess.commit` of all of it succeeded (`ATTServer.respond(to:result:now:)`).
    func finish(_ writes: [(AttributeHandle, [UInt8])], _ op: ATTOpcode, database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> ATTRequestOutcome {
        var values: [PersistedValue] = []
        var firstHandle: AttributeHandle?
        for (h, v) in writes {
            guard let a = database.attribute(at: h), let c = AttributeAccessRules.persistedCharacteristic(a, in: database) else { continue }
            values.append(PersistedValue(characteristic: c, value: v))
            firstHandle = firstHandle ?? h
        }
        let bonded = bondedClientState(after: writes, database: database, client: b)  // Vol 3 Part G §3.3.3.3
        guard let handle = firstHandle ?? bonded?.handle else {
            for (h, v) in writes { rules.apply(h, v, database: &database, client: &b, id, into: &outputs) }
            return .respond(op == .writeRequest ? .writeResponse : .executeWriteResponse)
        }
        return .wait(.commit(op, writes: writes), handle: handle, accesses: [(handle, .commit(values: values, clientState: bonded?.state))])
    }

    /// For a bonded client whose Write Request or Execute Write changes its CCCDs or Client
    /// Supported Features: the first such handle and the state after the writes (to be
    /// committed before the response); nil otherwise.
    func bondedClientState(after writes: [(AttributeHandle, [UInt8])], database: GATTDatabase, client b: ATTClient) -> (handle: AttributeHandle, state: GATTClientState)? {
        guard b.isBonded else { return nil }
        var after = b
        var first: AttributeHandle?
        for (h, v) in writes {
            guard let a = database.attribute(at: h) else { continue }
            switch a.role {
            case .clientCharacteristicConfiguration(let c): _ = after.writeCCCD(c, v)
            case .characteristicValue(let c) where c == rules.clientFeaturesCharacteristic: _ = after.writeClientFeatures(v)
            default: continue
            }
            first = first ?? h
        }
        guard let first, case let state = after.state(in: database), state != b.state(in: database) else { return nil }
        return (first, state)
    }

    // MARK: Write Command / Signed Write Command (§3.4.5.3, §3.4.5.4): never answered

    func writeCommand(_ h: AttributeHandle, _ v: [UInt8], signed: Bool, database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> ATTRequestOutcome {
        guard let a = database.attribute(at: h), rules.writeError(a, b, signed ? .signed : .command, in: database) == nil else { return .none }
        if let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
            guard v.count <= a.maxLength, deferredAccessAvailable else { return .none }
            outputs.append(.event(.writeCommand(id, characteristic: c, value: v)))
            return .none
        }
        guard rules.validateValue(a, v, b, in: database) == nil else { return .none }
        rules.apply(h, v, database: &database, client: &b, id, into: &outputs)
        return .none
    }

    /// Verifies the Authentication Signature with the client's CSRK; the Sign Counter must
    /// exceed the last accepted one (Vol 3 Part C §10.4.2). On failure the PDU is ignored.
    static func verifySignedWrite(_ pdu: [UInt8], signature: [UInt8], client b: inout ATTClient) -> Bool {
        guard let key = b.csrk, signature.count == 12, pdu.count >= 15 else { return false }
        let counter = UInt32(signature[0]) | UInt32(signature[1]) << 8 | UInt32(signature[2]) << 16 | UInt32(signature[3]) << 24
        if let last = b.lastSignCounter, counter <= last { return false }
        guard ATTSigning.signature(csrk: key, message: Array(pdu.dropLast(12)), signCounter: counter) == signature else {
            return false
        }
        b.lastSignCounter = counter
        return true
    }

    // MARK: Prepare Write (§3.4.6.1)

    func prepareWrite(_ h: AttributeHandle, _ offset: Int, _ v: [UInt8], in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome {
        guard let a = database.attribute(at: h) else { return .error(.prepareWriteRequest, h, .invalidHandle) }
        if let err = rules.writeError(a, b, .prepare, in: database) { return .error(.prepareWriteRequest, h, err) }
        if AttributeAccessRules.deferredCharacteristic(a, in: database) != nil, !deferredAccessAvailable {
            return .error(.prepareWriteRequest, h, .writeRequestRejected)
        }
        var handles = Set(b.prepareQueue.map(\.handle))
        handles.insert(h)
        if handles.count > 1, !handles.allSatisfy({ Self.isReliableWritable($0, in: database) }) {
            return .error(.prepareWriteRequest, h, .writeNotPermitted)
        }
        guard b.prepareQueue.count < maxPreparedWrites, b.preparedBytes + v.count <= maxPreparedBytes else {
            return .error(.prepareWriteRequest, h, .prepareQueueFull)
        }
        b.prepareQueue.append(.init(handle: h, offset: offset, value: v))
        b.preparedBytes += v.count
        return .respond(.prepareWriteResponse(handle: h, offset: UInt16(offset), value: v))
    }

    /// A value of a characteristic with the Reliable Write extended property.
    static func isReliableWritable(_ h: AttributeHandle, in database: GATTDatabase) -> Bool {
        guard let a = database.attribute(at: h), case .characteristicValue(let c) = a.role else { return false }
        return database[c].properties.contains(.reliableWrite)
    }

    // MARK: Execute Write (§3.4.6.3)

    func executeWrite(_ flags: UInt8, database: inout GATTDatabase, client b: inout ATTClient, _ id: ConnectionID, outputs: inout [ATTServerOutput]) -> ATTRequestOutcome {
        guard flags <= 0x01 else { return .error(.executeWriteRequest, 0, .invalidPDU) }
        let queue = b.prepareQueue
        b.prepareQueue = []
        b.preparedBytes = 0
        if flags == 0x00 || queue.isEmpty { return .respond(.executeWriteResponse) }

        var order: [AttributeHandle] = []
        for w in queue where !order.contains(w.handle) { order.append(w.handle) }
        var storedWrites: [(AttributeHandle, [UInt8])] = []
        var deferredWrites: [(handle: AttributeHandle, access: DeferredAccess)] = []
        for h in order {
            let parts = queue.filter { $0.handle == h }
            guard let a = database.attribute(at: h), let firstOffset = parts.first?.offset else {
                return .error(.executeWriteRequest, h, .invalidHandle)
            }
            if let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
                // The answerer owns the value: parts must follow each other.
                var value: [UInt8] = []
                for p in parts {
                    guard p.offset == firstOffset + value.count else { return .error(.executeWriteRequest, h, .invalidOffset) }
                    value += p.value
                }
                guard firstOffset + value.count <= a.maxLength else {
                    return .error(.executeWriteRequest, h, .invalidAttributeValueLength)
                }
                guard deferredAccessAvailable else { return .error(.executeWriteRequest, h, .writeRequestRejected) }
                deferredWrites.append((h, .write(characteristic: c, value: value, offset: firstOffset)))
            } else {
                var v = rules.currentValue(a, b)
                for p in parts {
                    guard p.offset <= v.count else { return .error(.executeWriteRequest, h, .invalidOffset) }
                    v = Array(v.prefix(p.offset)) + p.value
                    guard v.count <= a.maxLength else { return .error(.executeWriteRequest, h, .invalidAttributeValueLength) }
                }
                if let err = rules.validateValue(a, v, b, in: database) { return .error(.executeWriteRequest, h, err) }
                storedWrites.append((h, v))
            }
        }
        if deferredWrites.isEmpty { return finish(storedWrites, .executeWriteRequest, database: &database, client: &b, id, outputs: &outputs) }
        return .wait(.execute(storedWrites: storedWrites), handle: deferredWrites[0].handle, accesses: deferredWrites.map { ($0.handle, $0.access) })
    }
}
