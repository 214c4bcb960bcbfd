/// One Handle–UUID pair of an ATT_FIND_INFORMATION_RSP (Core Spec Vol 3 Part F §3.4.3.2).
public struct ATTHandleUUID: Equatable, Sendable {
    public var handle: AttributeHandle
    public var uuid: BluetoothUUID
    public init(handle: AttributeHandle, uuid: BluetoothUUID) { self.handle = handle; self.uuid = uuid }
}

/// One Handles Information entry of an ATT_FIND_BY_TYPE_VALUE_RSP (§3.4.3.4).
public struct ATTHandlesInformation: Equatable, Sendable {
    public var found: AttributeHandle
    public var groupEnd: AttributeHandle
    public init(found: AttributeHandle, groupEnd: AttributeHandle) { self.found = found; self.groupEnd = groupEnd }
}

/// A handle with a value: an Attribute Data entry of ATT_READ_BY_TYPE_RSP
/// (§3.4.4.2) or a tuple of ATT_MULTIPLE_HANDLE_VALUE_NTF (§3.4.7.4).
public struct ATTHandleValue: Equatable, Sendable {
    public var handle: AttributeHandle
    public var value: [UInt8]
    public init(handle: AttributeHandle, value: [UInt8]) { self.handle = handle; self.value = value }
}

/// One Attribute Data entry of an ATT_READ_BY_GROUP_TYPE_RSP (§3.4.4.10).
public struct ATTGroupData: Equatable, Sendable {
    public var handle: AttributeHandle
    public var groupEnd: AttributeHandle
    public var value: [UInt8]
    public init(handle: AttributeHandle, groupEnd: AttributeHandle, value: [UInt8]) {
        self.handle = handle; self.groupEnd = groupEnd; self.value = value
    }
}

/// Why bytes are not a well-formed ATT PDU.
public enum ATTPDUDecodingError: Error, Equatable, Sendable {
    case empty
    /// An opcode no PDU of Vol 3 Part F §3.4.8 has.
    case unknownOpcode(UInt8)
    /// A known opcode with a length or field layout its PDU does not allow.
    case invalidLength(ATTOpcode)
}

/// Every ATT PDU (Core Spec Vol 3 Part F §3.4), both directions, with strict
/// length validation on decode. Multi-octet fields are little-endian.
public enum ATTPDU: Equatable, Sendable {
    /// §3.4.1.1. `code` is the raw Error Code (application errors 0x80–0x9F included).
    case errorResponse(request: UInt8, handle: AttributeHandle, code: UInt8)
    /// §3.4.2.1 Client Rx MTU.
    case exchangeMTURequest(mtu: UInt16)
    /// §3.4.2.2 Server Rx MTU.
    case exchangeMTUResponse(mtu: UInt16)
    case findInformationRequest(start: AttributeHandle, end: AttributeHandle)
    /// All UUIDs must have the same ATT size (format 0x01: 16-bit, 0x02: 128-bit).
    case findInformationResponse([ATTHandleUUID])
    case findByTypeValueRequest(start: AttributeHandle, end: AttributeHandle, type: UInt16, value: [UInt8])
    case findByTypeValueResponse([ATTHandlesInformation])
    case readByTypeRequest(start: AttributeHandle, end: AttributeHandle, type: BluetoothUUID)
    /// All values must have the same length.
    case readByTypeResponse([ATTHandleValue])
    case readRequest(handle: AttributeHandle)
    case readResponse(value: [UInt8])
    case readBlobRequest(handle: AttributeHandle, offset: UInt16)
    case readBlobResponse(value: [UInt8])
    case readMultipleRequest(handles: [AttributeHandle])
    case readMultipleResponse(values: [UInt8])
    case readByGroupTypeRequest(start: AttributeHandle, end: AttributeHandle, type: BluetoothUUID)
    /// All values must have the same length.
    case readByGroupTypeResponse([ATTGroupData])
    case writeRequest(handle: AttributeHandle, value: [UInt8])
    case writeResponse
    case writeCommand(handle: AttributeHandle, value: [UInt8])
    /// `signature`: 12 octets, Sign Counter (LE32) then the 8-octet MAC (§3.4.5.4).
    case signedWriteCommand(handle: AttributeHandle, value: [UInt8], signature: [UInt8])
    case prepareWriteRequest(handle: AttributeHandle, offset: UInt16, value: [UInt8])
    case prepareWriteResponse(handle: AttributeHandle, offset: UInt16, value: [UInt8])
    /// 0x00 cancel, 0x01 write; other values are invalid (checked by the server, not here).
    case executeWriteRequest(flags: UInt8)
    case executeWriteResponse
    case readMultipleVariableRequest(handles: [AttributeHandle])
    /// Length Value Tuple List; each Value Length is the number of value octets carried
    /// (the last value may be truncated to fit the MTU).
    case readMultipleVariableResponse(values: [[UInt8]])
    case handleValueNotification(handle: AttributeHandle, value: [UInt8])
    case handleValueIndication(handle: AttributeHandle, value: [UInt8])
    case handleValueConfirmation
    case multipleHandleValueNotification([ATTHandleValue])

    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: .errorResponse
        case .exchangeMTURequest: .exchangeMTURequest
        case .exchangeMTUResponse: .exchangeMTUResponse
        case .findInformationRequest: .findInformationRequest
        case .findInformationResponse: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueRequest
        case .findByTypeValueResponse: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeRequest
        case .readByTypeResponse: .readByTypeResponse
        case .readRequest: .readRequest
        case .readResponse: .readResponse
        case .readBlobRequest: .readBlobRequest
        case .readBlobResponse: .readBlobResponse
        case .readMultipleRequest: .readMultipleRequest
        case .readMultipleResponse: .readMultipleResponse
        case .readByGroupTypeRequest: .readByGroupTypeRequest
        case .readByGroupTypeResponse: .readByGroupTypeResponse
        case .writeRequest: .writeRequest
        case .writeResponse: .writeResponse
        case .writeCommand: .writeCommand
        case .signedWriteCommand: .signedWriteCommand
        case .prepareWriteRequest: .prepareWriteRequest
        case .prepareWriteResponse: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteRequest
        case .executeWriteResponse: .executeWriteResponse
        case .readMultipleVariableRequest: .readMultipleVariableRequest
        case .readMultipleVariableResponse: .readMultipleVariableResponse
        case .handleValueNotification: .handleValueNotification
        case .handleValueIndication: .handleValueIndication
        case .handleValueConfirmation: .handleValueConfirmation
        case .multipleHandleValueNotification: .multipleHandleValueNotification
        }
    }

    /// Convenience for an Error Response.
    public static func error(_ request: ATTOpcode, _ handle: AttributeHandle, _ error: ATTError) -> ATTPDU {
        .errorResponse(request: request.rawValue, handle: handle, code: error.rawValue)
    }

    // MARK: Encoding

    /// The PDU's octets, opcode first.
    public var bytes: [UInt8] {
        switch self {
        case .handleValueNotification(let h, let v): return Self.handleValue(indication: false, handle: h, value: v[...])
        case .handleValueIndication(let h, let v): return Self.handleValue(indication: true, handle: h, value: v[...])
        default: break
        }
        var b: [UInt8] = [opcode.rawValue]
        switch self {
        case .errorResponse(let request, let handle, let code):
            b.append(request); b += handle.le; b.append(code)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            b += le16(mtu)
        case .findInformationRequest(let s, let e):
            b += s.le; b += e.le
        case .findInformationResponse(let info):
            let is16 = info.first?.uuid.is16Bit ?? true
            b.append(is16 ? 0x01 : 0x02)
            for i in info {
                b += i.handle.le
                b += is16 ? i.uuid.attBytes : i.uuid.littleEndian128
            }
        case .findByTypeValueRequest(let s, let e, let type, let value):
            b += s.le; b += e.le; b += le16(type); b += value
        case .findByTypeValueResponse(let list):
            for i in list { b += i.found.le; b += i.groupEnd.le }
        case .readByTypeRequest(let s, let e, let type), .readByGroupTypeRequest(let s, let e, let type):
            b += s.le; b += e.le; b += type.attBytes
        case .readByTypeResponse(let list):
            b.append(UInt8(truncatingIfNeeded: 2 + (list.first?.value.count ?? 0)))
            for i in list { b += i.handle.le; b += i.value }
        case .readRequest(let h):
            b += h.le
        case .readResponse(let v), .readBlobResponse(let v), .readMultipleResponse(let v):
            b += v
        case .readBlobRequest(let h, let offset):
            b += h.le; b += le16(offset)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            for h in handles { b += h.le }
        case .readByGroupTypeResponse(let list):
            b.append(UInt8(truncatingIfNeeded: 4 + (list.first?.value.count ?? 0)))
            for i in list { b += i.handle.le; b += i.groupEnd.le; b += i.value }
        case .writeRequest(let h, let v), .writeCommand(let h, let v):
            b += h.le; b += v
        case .handleValueNotification, .handleValueIndication:
            break  // encoded above
        case .signedWriteCommand(let h, let v, let signature):
            b += h.le; b += v; b += signature
        case .prepareWriteRequest(let h, let offset, let v), .prepareWriteResponse(let h, let offset, let v):
            b += h.le; b += le16(offset); b += v
        case .executeWriteRequest(let flags):
            b.append(flags)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .readMultipleVariableResponse(let values):
            for v in values { b += le16(UInt16(truncatingIfNeeded: v.count)); b += v }
        case .multipleHandleValueNotification(let list):
            for i in list { b += i.handle.le; b += le16(UInt16(truncatingIfNeeded: i.value.count)); b += i.value }
        }
        return b
    }

    /// A Handle Value Notification's or Indication's octets (§3.4.7.1, §3.4.7.2) carrying
    /// `value` as it is (a server cuts it to ATT_MTU-3 first), sized once: `bytes` encodes
    /// them with it, and so does the server's `notify`, which needs no `ATTPDU` of a slice.
    public static func handleValue(indication: Bool, handle: AttributeHandle, value: ArraySlice<UInt8>) -> [UInt8] {
        var pdu: [UInt8] = []
        pdu.reserveCapacity(3 + value.count)
        pdu.append(indication ? ATTOpcode.handleValueIndication.rawValue : ATTOpcode.handleValueNotification.rawValue)
        pdu.append(UInt8(handle.rawValue & 0xFF))
        pdu.append(UInt8(handle.rawValue >> 8))
        pdu.append(contentsOf: value)
        return pdu
    }

    // MARK: Decoding

    /// Decodes one PDU; any length the PDU's definition does not allow is rejected.
    public init(decoding bytes: [UInt8]) throws(ATTPDUDecodingError) {
        guard let first = bytes.first else { throw .empty }
        guard let op = ATTOpcode(rawValue: first) else { throw .unknownOpcode(first) }
        var r = ATTByteReader(bytes.dropFirst())
        let bad = ATTPDUDecodingError.invalidLength(op)
        let n = bytes.count
        func exact(_ len: Int) throws(ATTPDUDecodingError) { if n != len { throw bad } }
        func atLeast(_ len: Int) throws(ATTPDUDecodingError) { if n < len { throw bad } }
        switch op {
        case .errorResponse:
            try exact(5)
            self = .errorResponse(request: r.u8(), handle: r.handle(), code: r.u8())
        case .exchangeMTURequest:
            try exact(3); self = .exchangeMTURequest(mtu: r.u16())
        case .exchangeMTUResponse:
            try exact(3); self = .exchangeMTUResponse(mtu: r.u16())
        case .findInformationRequest:
            try exact(5); self = .findInformationRequest(start: r.handle(), end: r.handle())
        case .findInformationResponse:
            try atLeast(2)
            let format = r.u8()
            let size: Int
            switch format {
            case 0x01: size = 4
            case 0x02: size = 18
            default: throw bad
            }
            guard r.remaining > 0, r.remaining % size == 0 else { throw bad }
            var list: [ATTHandleUUID] = []
            while r.remaining > 0 {
                let h = r.handle()
                guard let u = BluetoothUUID(littleEndian: r.take(size - 2)) else { throw bad }
                list.append(ATTHandleUUID(handle: h, uuid: u))
            }
            self = .findInformationResponse(list)
        case .findByTypeValueRequest:
            try atLeast(7)
            self = .findByTypeValueRequest(start: r.handle(), end: r.handle(), type: r.u16(), value: r.rest())
        case .findByTypeValueResponse:
            guard n >= 5, (n - 1) % 4 == 0 else { throw bad }
            var list: [ATTHandlesInformation] = []
            while r.remaining > 0 { list.append(ATTHandlesInformation(found: r.handle(), groupEnd: r.handle())) }
            self = .findByTypeValueResponse(list)
        case .readByTypeRequest, .readByGroupTypeRequest:
            guard n == 7 || n == 21 else { throw bad }
            let s = r.handle(), e = r.handle()
            guard let u = BluetoothUUID(littleEndian: r.rest()) else { throw bad }
            self = op == .readByTypeRequest
                ? .readByTypeRequest(start: s, end: e, type: u) : .readByGroupTypeRequest(start: s, end: e, type: u)
        case .readByTypeResponse:
            try atLeast(2)
            let len = Int(r.u8())
            guard len >= 2, r.remaining > 0, r.remaining % len == 0 else { throw bad }
            var list: [ATTHandleValue] = []
            while r.remaining > 0 { list.append(ATTHandleValue(handle: r.handle(), value: r.take(len - 2))) }
            self = .readByTypeResponse(list)
        case .readRequest:
            try exact(3); self = .readRequest(handle: r.handle())
        case .readResponse:
            self = .readResponse(value: r.rest())
        case .readBlobRequest:
            try exact(5); self = .readBlobRequest(handle: r.handle(), offset: r.u16())
        case .readBlobResponse:
            self = .readBlobResponse(value: r.rest())
        case .readMultipleRequest, .readMultipleVariableRequest:
            // Set Of Handles: at least two handles (§3.4.4.7, §3.4.4.11).
            guard n >= 5, (n - 1) % 2 == 0 else { throw bad }
            var handles: [AttributeHandle] = []
            while r.remaining > 0 { handles.append(r.handle()) }
            self = op == .readMultipleRequest ? .readMultipleRequest(handles: handles) : .readMultipleVariableRequest(handles: handles)
        case .readMultipleResponse:
            self = .readMultipleResponse(values: r.rest())
        case .readByGroupTypeResponse:
            try atLeast(2)
            let len = Int(r.u8())
            guard len >= 4, r.remaining > 0, r.remaining % len == 0 else { throw bad }
            var list: [ATTGroupData] = []
            while r.remaining > 0 {
                list.append(ATTGroupData(handle: r.handle(), groupEnd: r.handle(), value: r.take(len - 4)))
            }
            self = .readByGroupTypeResponse(list)
        case .writeRequest:
            try atLeast(3); self = .writeRequest(handle: r.handle(), value: r.rest())
        case .writeResponse:
            try exact(1); self = .writeResponse
        case .writeCommand:
            try atLeast(3); self = .writeCommand(handle: r.handle(), value: r.rest())
        case .signedWriteCommand:
            try atLeast(15)
            let h = r.handle()
            let value = r.take(r.remaining - 12)
            self = .signedWriteCommand(handle: h, value: value, signature: r.rest())
        case .prepareWriteRequest:
            try atLeast(5); self = .prepareWriteRequest(handle: r.handle(), offset: r.u16(), value: r.rest())
        case .prepareWriteResponse:
            try atLeast(5); self = .prepareWriteResponse(handle: r.handle(), offset: r.u16(), value: r.rest())
        case .executeWriteRequest:
            try exact(2); self = .executeWriteRequest(flags: r.u8())
        case .executeWriteResponse:
            try exact(1); self = .executeWriteResponse
        case .readMultipleVariableResponse:
            var values: [[UInt8]] = []
            while r.remaining >= 2 {
                let len = Int(r.u16())
                values.append(r.take(min(len, r.remaining)))
            }
            guard r.remaining == 0 else { throw bad }
            self = .readMultipleVariableResponse(values: values)
        case .handleValueNotification:
            try atLeast(3); self = .handleValueNotification(handle: r.handle(), value: r.rest())
        case .handleValueIndication:
            try atLeast(3); self = .handleValueIndication(handle: r.handle(), value: r.rest())
        case .handleValueConfirmation:
            try exact(1); self = .handleValueConfirmation
        case .multipleHandleValueNotification:
            var list: [ATTHandleValue] = []
            while r.remaining > 0 {
                guard r.remaining >= 4 else { throw bad }
                let h = r.handle()
                let len = Int(r.u16())
                guard len <= r.remaining else { throw bad }
                list.append(ATTHandleValue(handle: h, value: r.take(len)))
            }
            guard list.count >= 2 else { throw bad }
            self = .multipleHandleValueNotification(list)
        }
    }
}

extension AttributeHandle {
    /// The handle as two little-endian octets.
    var le: [UInt8] { le16(rawValue) }
}
