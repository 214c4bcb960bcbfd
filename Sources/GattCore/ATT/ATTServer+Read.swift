// Discovery and read requests (Core Spec Vol 3 Part F §3.4.3, §3.4.4).

extension ATTServer {
    // MARK: Helpers

    /// Read permission of an attribute on this bearer (§3.2.5).
    func readError(_ a: Attribute, _ b: ATTClient) -> ATTError? {
        readError(a, security: b.security, keySize: b.keySize)
    }

    func readError(_ a: Attribute, security: SecurityLevel, keySize: Int?) -> ATTError? {
        guard a.permissions.canRead else { return .readNotPermitted }
        let authenticated = a.permissions.contains(.readAuthenticationRequired)
        guard authenticated || a.permissions.contains(.readEncryptionRequired) else { return nil }
        return Self.securityError(security, keySize: keySize, authenticated: authenticated, minimumKeySize: configuration.minimumKeySize)
    }

    /// The value this client sees: CCCDs and Client Supported Features are per client.
    func currentValue(_ a: Attribute, _ b: ATTClient) -> [UInt8] {
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            return le16(b.cccd[c] ?? 0)
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            return b.clientFeatures
        default:
            return a.value
        }
    }

    /// `currentValue(_:_:)` of client `id`, read in place.
    func currentValue(_ a: Attribute, of id: ConnectionID) -> [UInt8] {
        switch a.role {
        case .clientCharacteristicConfiguration(let c):
            return le16(clients[id]?.cccd[c] ?? 0)
        case .characteristicValue(let c) where c == clientFeaturesCharacteristic:
            return clients[id]?.clientFeatures ?? [0x00]
        default:
            return a.value
        }
    }

    /// The attributes with handles in start...end (both already validated as a range).
    func attributes(_ start: AttributeHandle, _ end: AttributeHandle) -> ArraySlice<Attribute> {
        let lo = database.firstIndex(atOrAfter: Int(start.rawValue))
        let hi = database.firstIndex(atOrAfter: Int(end.rawValue) + 1)  // handles may have gaps
        guard lo < hi else { return [] }
        return database.attributes[lo..<hi]
    }

    /// §3.4.3.1 etc.: Starting Handle 0x0000 or greater than Ending Handle → Invalid Handle
    /// with the Starting Handle.
    mutating func rangeIsInvalid(_ op: ATTOpcode, _ s: AttributeHandle, _ e: AttributeHandle, _ id: BearerID) -> Bool {
        guard s.rawValue == 0 || s > e else { return false }
        sendError(op, s, .invalidHandle, to: id)
        return true
    }

    // MARK: Find Information (§3.4.3.1)

    mutating func findInformation(_ s: AttributeHandle, _ e: AttributeHandle, _ id: BearerID) {
        guard let mtu = bearers[id]?.mtu, !rangeIsInvalid(.findInformationRequest, s, e, id) else { return }
        var list: [ATTHandleUUID] = []
        var is16 = true
        for a in attributes(s, e) {
            if list.isEmpty { is16 = a.type.is16Bit } else if a.type.is16Bit != is16 { break }
            let size = is16 ? 4 : 18
            guard 2 + (list.count + 1) * size <= mtu else { break }
            list.append(ATTHandleUUID(handle: a.handle, uuid: a.type))
        }
        if list.isEmpty { return sendError(.findInformationRequest, s, .attributeNotFound, to: id) }
        send(.findInformationResponse(list), to: id)
    }

    // MARK: Find By Type Value (§3.4.3.3)

    mutating func findByTypeValue(_ s: AttributeHandle, _ e: AttributeHandle, _ type: UInt16, _ value: [UInt8], _ id: BearerID) {
        guard let b = clients[id.connection], let mtu = bearers[id]?.mtu, !rangeIsInvalid(.findByTypeValueRequest, s, e, id) else { return }
        let t = BluetoothUUID(uuid16: type)
        let isService = t == GATTUUID.primaryService || t == GATTUUID.secondaryService
        let wanted = isService ? BluetoothUUID(littleEndian: value) : nil
        var list: [ATTHandlesInformation] = []
        for a in attributes(s, e) where a.type == t && readError(a, b) == nil {
            let v = currentValue(a, b)
            let matches = wanted.map { BluetoothUUID(littleEndian: v) == $0 } ?? (v == value)
            guard matches else { continue }
            guard 1 + (list.count + 1) * 4 <= mtu else { break }
            var groupEnd = a.handle
            if case .serviceDeclaration(let i) = a.role { groupEnd = database.services[i].endHandle }
            list.append(ATTHandlesInformation(found: a.handle, groupEnd: groupEnd))
        }
        if list.isEmpty { return sendError(.findByTypeValueRequest, s, .attributeNotFound, to: id) }
        send(.findByTypeValueResponse(list), to: id)
    }

    // MARK: Read By Type (§3.4.4.1)

    mutating func readByType(_ s: AttributeHandle, _ e: AttributeHandle, _ type: BluetoothUUID, _ id: BearerID) {
        guard let b = clients[id.connection], let mtu = bearers[id]?.mtu, !rangeIsInvalid(.readByTypeRequest, s, e, id) else { return }
        // Each entry: handle + value, Length ≤ 255; the PDU (2 + entries) ≤ ATT_MTU.
        let maxValue = min(mtu - 4, 253)
        var list: [ATTHandleValue] = []
        // Types compared in place; an attribute is copied out only when its type matches.
        let range = attributes(s, e)
        for k in range.indices where range[k].type == type {
            let a = range[k]
            if let err = readError(a, b) {
                // The first attribute's error is the answer; later ones end the list.
                if list.isEmpty { return sendError(.readByTypeRequest, a.handle, err, to: id) }
                break
            }
            let v = Array(currentValue(a, b).prefix(maxValue))
            if let first = list.first, first.value.count != v.count { break }
            guard 2 + (list.count + 1) * (2 + v.count) <= mtu else { break }
            list.append(ATTHandleValue(handle: a.handle, value: v))
        }
        if list.isEmpty { return sendError(.readByTypeRequest, s, .attributeNotFound, to: id) }
        if list.contains(where: { $0.handle == database.databaseHashHandle }) { databaseHashRead(id.connection) }
        send(.readByTypeResponse(list), to: id)
    }

    // MARK: Read By Group Type (§3.4.4.9)

    mutating func readByGroupType(_ s: AttributeHandle, _ e: AttributeHandle, _ type: BluetoothUUID, _ id: BearerID) {
        guard let mtu = bearers[id]?.mtu, !rangeIsInvalid(.readByGroupTypeRequest, s, e, id) else { return }
        // The grouping types are «Primary Service» and «Secondary Service» (Vol 3 Part G
        // §2.5.3); anything else, «Characteristic» included, is Unsupported Group Type.
        let wantsPrimary: Bool
        switch type {
        case GATTUUID.primaryService: wantsPrimary = true
        case GATTUUID.secondaryService: wantsPrimary = false
        default: return sendError(.readByGroupTypeRequest, s, .unsupportedGroupType, to: id)
        }
        let maxValue = min(mtu - 6, 251)
        var list: [ATTGroupData] = []
        for svc in database.services where svc.isPrimary == wantsPrimary && svc.handle >= s && svc.handle <= e {
            let v = Array(svc.uuid.attBytes.prefix(maxValue))
            if let first = list.first, first.value.count != v.count { break }
            guard 2 + (list.count + 1) * (4 + v.count) <= mtu else { break }
            list.append(ATTGroupData(handle: svc.handle, groupEnd: svc.endHandle, value: v))
        }
        if list.isEmpty { return sendError(.readByGroupTypeRequest, s, .attributeNotFound, to: id) }
        send(.readByGroupTypeResponse(list), to: id)
    }

    // MARK: Read / Read Blob (§3.4.4.3, §3.4.4.5)

    mutating func read(_ op: ATTOpcode, _ h: AttributeHandle, offset: Int, _ id: BearerID, at i: Dictionary<BearerID, ATTBearer>.Index, now: Duration) {
        guard let a = database.attribute(at: h), let client = clients[id.connection] else { return sendError(op, h, .invalidHandle, to: id) }
        let (security, keySize, mtu) = (client.security, client.keySize, inBearer(i) { $0.mtu })
        if let err = readError(a, security: security, keySize: keySize) { return sendError(op, h, err, to: id) }
        if deferredAccessAvailable, case .characteristicValue(let c) = a.role, database[c].valueSource == .deferred {
            let rid = startPending(.read(op), handle: h, waiting: [h], id, now: now)
            emit(.deferredAccess(id: rid[0], id.connection, .read(characteristic: c, offset: offset)))
            return
        }
        let v = currentValue(a, of: id.connection)
        guard offset <= v.count else { return sendError(op, h, .invalidOffset, to: id) }
        if h == database.databaseHashHandle { databaseHashRead(id.connection) }
        // The Read (Blob) Response's bytes, sized once (as `ATTPDU.bytes` encodes them).
        let part = v[offset...].prefix(mtu - 1)
        var pdu: [UInt8] = []
        pdu.reserveCapacity(1 + part.count)
        pdu.append(op == .readRequest ? ATTOpcode.readResponse.rawValue : ATTOpcode.readBlobResponse.rawValue)
        pdu.append(contentsOf: part)
        enqueue(pdu, isUpdate: false, at: i, id)
    }

    // MARK: Read Multiple / Read Multiple Variable (§3.4.4.7, §3.4.4.11)

    mutating func readMultiple(_ handles: [AttributeHandle], variable: Bool, _ id: BearerID) {
        guard let b = clients[id.connection], let mtu = bearers[id]?.mtu else { return }
        let op: ATTOpcode = variable ? .readMultipleVariableRequest : .readMultipleRequest
        var values: [[UInt8]] = []
        for h in handles {
            guard let a = database.attribute(at: h) else { return sendError(op, h, .invalidHandle, to: id) }
            if let err = readError(a, b) { return sendError(op, h, err, to: id) }
            values.append(currentValue(a, b))
        }
        if !variable {
            send(.readMultipleResponse(values: Array(values.joined().prefix(mtu - 1))), to: id)
            return
        }
        // Tuples of Length (2) + Value; the list is cut to ATT_MTU-1, never inside a Length.
        var room = mtu - 1
        var out: [[UInt8]] = []
        for v in values {
            guard room >= 2 else { break }
            let part = Array(v.prefix(room - 2))
            out.append(part)
            room -= 2 + part.count
        }
        send(.readMultipleVariableResponse(values: out), to: id)
    }
}
