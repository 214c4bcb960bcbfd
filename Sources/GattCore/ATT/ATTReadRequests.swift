/// The discovery and read requests (Core Spec Vol 3 Part F §3.4.3, §3.4.4): each answer
/// computed from the database and the asking client's state (read in place), for a bearer of
/// ATT_MTU `mtu`, and returned for `ATTServer` to send.
///
/// Decisions where the specification leaves room:
/// - Attribute Not Long (0x0B) is never sent: the spec only allows it ("may") for
///   fixed-length values, values here are variable; Read Blob of a short value at offset 0
///   returns it (as Zephyr and BlueZ do). Offset == length returns an empty value,
///   offset > length gives Invalid Offset.
/// - `.deferred` values are handed out (a `.wait`) only when `deferredAccessAvailable`;
///   otherwise reads return the stored value. Read By Type / Read Multiple / Find By Type
///   Value use the stored value of deferred characteristics (they are not handed out).
struct ATTReadRequests {
    let rules: AttributeAccessRules
    /// Whether reads of `.deferred` values can be handed out now.
    let deferredAccessAvailable: Bool

    /// The answer to a discovery or read request of client `b`; nil for any other PDU.
    func answer(_ pdu: ATTPDU, mtu: Int, in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome? {
        switch pdu {
        case .findInformationRequest(let s, let e): findInformation(s, e, mtu: mtu, in: database)
        case .findByTypeValueRequest(let s, let e, let type, let value): findByTypeValue(s, e, type, value, mtu: mtu, in: database, client: &b)
        case .readByTypeRequest(let s, let e, let type): readByType(s, e, type, mtu: mtu, in: database, client: &b)
        case .readRequest(let h): read(.readRequest, h, offset: 0, mtu: mtu, in: database, client: &b)
        case .readBlobRequest(let h, let offset): read(.readBlobRequest, h, offset: Int(offset), mtu: mtu, in: database, client: &b)
        case .readMultipleRequest(let handles): readMultiple(handles, variable: false, mtu: mtu, in: database, client: &b)
        case .readMultipleVariableRequest(let handles): readMultiple(handles, variable: true, mtu: mtu, in: database, client: &b)
        case .readByGroupTypeRequest(let s, let e, let type): readByGroupType(s, e, type, mtu: mtu, in: database)
        default: nil
        }
    }

    /// The attributes with handles in start...end (both already validated as a range).
    static func attributes(_ start: AttributeHandle, _ end: AttributeHandle, in database: GATTDatabase) -> ArraySlice<Attribute> {
        let lo = database.firstIndex(atOrAfter: Int(start.rawValue))
        let hi = database.firstIndex(atOrAfter: Int(end.rawValue) + 1)  // handles may have gaps
        guard lo < hi else { return [] }
        return database.attributes[lo..<hi]
    }

    /// §3.4.3.1 etc.: Starting Handle 0x0000 or greater than Ending Handle → Invalid Handle
    /// with the Starting Handle.
    static func invalidRange(_ op: ATTOpcode, _ s: AttributeHandle, _ e: AttributeHandle) -> ATTRequestOutcome? {
        s.rawValue == 0 || s > e ? .error(op, s, .invalidHandle) : nil
    }

    // MARK: Find Information (§3.4.3.1)

    func findInformation(_ s: AttributeHandle, _ e: AttributeHandle, mtu: Int, in database: GATTDatabase) -> ATTRequestOutcome {
        if let invalid = Self.invalidRange(.findInformationRequest, s, e) { return invalid }
        var list: [ATTHandleUUID] = []
        var is16 = true
        for a in Self.attributes(s, e, in: database) {
            if list.isEmpty { is16 = a.type.is16Bit } else if a.type.is16Bit != is16 { break }
            let size = is16 ? 4 : 18
            guard 2 + (list.count + 1) * size <= mtu else { break }
            list.append(ATTHandleUUID(handle: a.handle, uuid: a.type))
        }
        if list.isEmpty { return .error(.findInformationRequest, s, .attributeNotFound) }
        return .respond(.findInformationResponse(list))
    }

    // MARK: Find By Type Value (§3.4.3.3)

    func findByTypeValue(_ s: AttributeHandle, _ e: AttributeHandle, _ type: UInt16, _ value: [UInt8], mtu: Int, in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome {
        if let invalid = Self.invalidRange(.findByTypeValueRequest, s, e) { return invalid }
        let t = BluetoothUUID(uuid16: type)
        let isService = t == GATTUUID.primaryService || t == GATTUUID.secondaryService
        let wanted = isService ? BluetoothUUID(littleEndian: value) : nil
        var list: [ATTHandlesInformation] = []
        for a in Self.attributes(s, e, in: database) where a.type == t && rules.readError(a, b) == nil {
            let v = rules.currentValue(a, b)
            let matches = wanted.map { BluetoothUUID(littleEndian: v) == $0 } ?? (v == value)
            guard matches else { continue }
            guard 1 + (list.count + 1) * 4 <= mtu else { break }
            var groupEnd = a.handle
            if case .serviceDeclaration(let i) = a.role { groupEnd = database.services[i].endHandle }
            list.append(ATTHandlesInformation(found: a.handle, groupEnd: groupEnd))
        }
        if list.isEmpty { return .error(.findByTypeValueRequest, s, .attributeNotFound) }
        return .respond(.findByTypeValueResponse(list))
    }

    // MARK: Read By Type (§3.4.4.1)

    func readByType(_ s: AttributeHandle, _ e: AttributeHandle, _ type: BluetoothUUID, mtu: Int, in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome {
        if let invalid = Self.invalidRange(.readByTypeRequest, s, e) { return invalid }
        // Each entry: handle + value, Length ≤ 255; the PDU (2 + entries) ≤ ATT_MTU.
        let maxValue = min(mtu - 4, 253)
        var list: [ATTHandleValue] = []
        // Types compared in place; an attribute is copied out only when its type matches.
        let range = Self.attributes(s, e, in: database)
        for k in range.indices where range[k].type == type {
            let a = range[k]
            if let err = rules.readError(a, b) {
                // The first attribute's error is the answer; later ones end the list.
                if list.isEmpty { return .error(.readByTypeRequest, a.handle, err) }
                break
            }
            let v = Array(rules.currentValue(a, b).prefix(maxValue))
            if let first = list.first, first.value.count != v.count { break }
            guard 2 + (list.count + 1) * (2 + v.count) <= mtu else { break }
            list.append(ATTHandleValue(handle: a.handle, value: v))
        }
        if list.isEmpty { return .error(.readByTypeRequest, s, .attributeNotFound) }
        if list.contains(where: { $0.handle == database.databaseHashHandle }) { b.databaseHashRead() }
        return .respond(.readByTypeResponse(list))
    }

    // MARK: Read By Group Type (§3.4.4.9)

    func readByGroupType(_ s: AttributeHandle, _ e: AttributeHandle, _ type: BluetoothUUID, mtu: Int, in database: GATTDatabase) -> ATTRequestOutcome {
        if let invalid = Self.invalidRange(.readByGroupTypeRequest, s, e) { return invalid }
        // The grouping types are «Primary Service» and «Secondary Service» (Vol 3 Part G
        // §2.5.3); anything else, «Characteristic» included, is Unsupported Group Type.
        let wantsPrimary: Bool
        switch type {
        case GATTUUID.primaryService: wantsPrimary = true
        case GATTUUID.secondaryService: wantsPrimary = false
        default: return .error(.readByGroupTypeRequest, s, .unsupportedGroupType)
        }
        let maxValue = min(mtu - 6, 251)
        var list: [ATTGroupData] = []
        for svc in database.services where svc.isPrimary == wantsPrimary && svc.handle >= s && svc.handle <= e {
            let v = Array(svc.uuid.attBytes.prefix(maxValue))
            if let first = list.first, first.value.count != v.count { break }
            guard 2 + (list.count + 1) * (4 + v.count) <= mtu else { break }
            list.append(ATTGroupData(handle: svc.handle, groupEnd: svc.endHandle, value: v))
        }
        if list.isEmpty { return .error(.readByGroupTypeRequest, s, .attributeNotFound) }
        return .respond(.readByGroupTypeResponse(list))
    }

    // MARK: Read / Read Blob (§3.4.4.3, §3.4.4.5)

    func read(_ op: ATTOpcode, _ h: AttributeHandle, offset: Int, mtu: Int, in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome {
        guard let a = database.attribute(at: h) else { return .error(op, h, .invalidHandle) }
        if let err = rules.readError(a, security: b.security, keySize: b.keySize) { return .error(op, h, err) }
        if deferredAccessAvailable, let c = AttributeAccessRules.deferredCharacteristic(a, in: database) {
            return .wait(.read(op), handle: h, accesses: [(h, .read(characteristic: c, offset: offset))])
        }
        let v = rules.currentValue(a, b)
        guard offset <= v.count else { return .error(op, h, .invalidOffset) }
        if h == database.databaseHashHandle { b.databaseHashRead() }
        // The Read (Blob) Response's bytes, sized once (as `ATTPDU.bytes` encodes them).
        let part = v[offset...].prefix(mtu - 1)
        var pdu: [UInt8] = []
        pdu.reserveCapacity(1 + part.count)
        pdu.append(op == .readRequest ? ATTOpcode.readResponse.rawValue : ATTOpcode.readBlobResponse.rawValue)
        pdu.append(contentsOf: part)
        return .respondBytes(pdu)
    }

    // MARK: Read Multiple / Read Multiple Variable (§3.4.4.7, §3.4.4.11)

    func readMultiple(_ handles: [AttributeHandle], variable: Bool, mtu: Int, in database: GATTDatabase, client b: inout ATTClient) -> ATTRequestOutcome {
        let op: ATTOpcode = variable ? .readMultipleVariableRequest : .readMultipleRequest
        var values: [[UInt8]] = []
        for h in handles {
            guard let a = database.attribute(at: h) else { return .error(op, h, .invalidHandle) }
            if let err = rules.readError(a, b) { return .error(op, h, err) }
            values.append(rules.currentValue(a, b))
        }
        if !variable { return .respond(.readMultipleResponse(values: Array(values.joined().prefix(mtu - 1)))) }
        // Tuples of Length (2) + Value; the list is cut to ATT_MTU-1, never inside a Length.
        var room = mtu - 1
        var out: [[UInt8]] = []
        for v in values {
            guard room >= 2 else { break }
            let part = Array(v.prefix(room - 2))
            out.append(part)
            room -= 2 + part.count
        }
        return .respond(.readMultipleVariableResponse(values: out))
    }
}
