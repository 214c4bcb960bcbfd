/// One readable line per ATT PDU, for the daemon's debug log: the PDU's name, its handles
/// and its value (quoted when it is printable ASCII, hex otherwise, with its length),
/// errors with their names: `Read Request handle 0x0012`, `Read Response "hello" (5 B)`,
/// `Error Response to Write Request handle 0x0012: Write Not Permitted (0x03)`.
extension ATTPDU {
    /// The line for raw PDU bytes as they go over the bearer; bytes that do not decode
    /// are shown as such (`malformed Read Request 0a12 (2 B)`).
    public static func logDescription(of bytes: [UInt8]) -> String {
        do {
            return try ATTPDU(decoding: bytes).logDescription
        } catch {
            switch error {
            case .empty: return "empty ATT PDU"
            case .unknownOpcode(let op): return "unknown ATT opcode 0x\(AttributeValueLiteral.hexString([op])) \(Self.value(bytes))"
            case .invalidLength(let op): return "malformed \(op.displayName) \(Self.value(bytes))"
            }
        }
    }

    public var logDescription: String {
        let name = opcode.displayName
        switch self {
        case .errorResponse(let request, let handle, let code):
            let req = ATTOpcode(rawValue: request).map(\.displayName) ?? "opcode 0x\(AttributeValueLiteral.hexString([request]))"
            return "\(name) to \(req) handle \(handle): \(ATTError.displayName(code: code))"
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            return "\(name) MTU \(mtu)"
        case .findInformationRequest(let start, let end):
            return "\(name) handles \(start)-\(end)"
        case .findInformationResponse(let entries):
            return "\(name) " + entries.map { "\($0.handle) \($0.uuid)" }.joined(separator: ", ")
        case .findByTypeValueRequest(let start, let end, let type, let v):
            return "\(name) handles \(start)-\(end) type \(BluetoothUUID(uuid16: type)) value \(Self.value(v))"
        case .findByTypeValueResponse(let entries):
            return "\(name) " + entries.map { "\($0.found)-\($0.groupEnd)" }.joined(separator: ", ")
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            return "\(name) handles \(start)-\(end) type \(type)"
        case .readByTypeResponse(let entries), .multipleHandleValueNotification(let entries):
            return "\(name) " + entries.map { "\($0.handle) \(Self.value($0.value))" }.joined(separator: ", ")
        case .readByGroupTypeResponse(let entries):
            return "\(name) " + entries.map { "\($0.handle)-\($0.groupEnd) \(Self.value($0.value))" }.joined(separator: ", ")
        case .readRequest(let handle):
            return "\(name) handle \(handle)"
        case .readResponse(let v), .readBlobResponse(let v), .readMultipleResponse(let v):
            return "\(name) \(Self.value(v))"
        case .readBlobRequest(let handle, let offset):
            return "\(name) handle \(handle) offset \(offset)"
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            return "\(name) handles " + handles.map(\.description).joined(separator: ", ")
        case .readMultipleVariableResponse(let values):
            return "\(name) " + values.map { Self.value($0) }.joined(separator: ", ")
        case .writeRequest(let handle, let v), .writeCommand(let handle, let v), .handleValueNotification(let handle, let v),
            .handleValueIndication(let handle, let v):
            return "\(name) handle \(handle) \(Self.value(v))"
        case .signedWriteCommand(let handle, let v, _):
            return "\(name) handle \(handle) \(Self.value(v)), signed"
        case .prepareWriteRequest(let handle, let offset, let v), .prepareWriteResponse(let handle, let offset, let v):
            return "\(name) handle \(handle) offset \(offset) \(Self.value(v))"
        case .executeWriteRequest(let flags):
            return "\(name) (\(flags == 0 ? "cancel" : flags == 1 ? "write" : "flags 0x\(AttributeValueLiteral.hexString([flags]))"))"
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            return name
        }
    }

    /// `"hello" (5 B)` for printable ASCII, `0048 (2 B)` otherwise; the first 32 bytes
    /// of longer values, then `…`.
    static func value(_ v: [UInt8]) -> String {
        if v.isEmpty { return "(0 B)" }
        let shown = v.prefix(32)
        let text: String
        if v.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) {
            text = "\"" + String(decoding: shown, as: UTF8.self) + (v.count > 32 ? "…" : "") + "\""
        } else {
            text = AttributeValueLiteral.hexString(Array(shown)) + (v.count > 32 ? "…" : "")
        }
        return "\(text) (\(v.count) B)"
    }
}

extension ATTOpcode {
    /// The PDU's name as the Core Specification titles it: "Read By Group Type Request".
    public var displayName: String {
        switch self {
        case .errorResponse: "Error Response"
        case .exchangeMTURequest: "Exchange MTU Request"
        case .exchangeMTUResponse: "Exchange MTU Response"
        case .findInformationRequest: "Find Information Request"
        case .findInformationResponse: "Find Information Response"
        case .findByTypeValueRequest: "Find By Type Value Request"
        case .findByTypeValueResponse: "Find By Type Value Response"
        case .readByTypeRequest: "Read By Type Request"
        case .readByTypeResponse: "Read By Type Response"
        case .readRequest: "Read Request"
        case .readResponse: "Read Response"
        case .readBlobRequest: "Read Blob Request"
        case .readBlobResponse: "Read Blob Response"
        case .readMultipleRequest: "Read Multiple Request"
        case .readMultipleResponse: "Read Multiple Response"
        case .readByGroupTypeRequest: "Read By Group Type Request"
        case .readByGroupTypeResponse: "Read By Group Type Response"
        case .writeRequest: "Write Request"
        case .writeResponse: "Write Response"
        case .prepareWriteRequest: "Prepare Write Request"
        case .prepareWriteResponse: "Prepare Write Response"
        case .executeWriteRequest: "Execute Write Request"
        case .executeWriteResponse: "Execute Write Response"
        case .readMultipleVariableRequest: "Read Multiple Variable Request"
        case .readMultipleVariableResponse: "Read Multiple Variable Response"
        case .multipleHandleValueNotification: "Multiple Handle Value Notification"
        case .handleValueNotification: "Handle Value Notification"
        case .handleValueIndication: "Handle Value Indication"
        case .handleValueConfirmation: "Handle Value Confirmation"
        case .writeCommand: "Write Command"
        case .signedWriteCommand: "Signed Write Command"
        }
    }
}

extension ATTError {
    /// "Read Not Permitted (0x02)"; application errors (0x80–0x9F) and unknown codes by number.
    public static func displayName(code: UInt8) -> String {
        let hex = "(0x" + AttributeValueLiteral.hexString([code]) + ")"
        guard let e = ATTError(rawValue: code) else {
            return (0x80...0x9F).contains(code) ? "Application Error \(hex)" : "Error \(hex)"
        }
        let words = e.name.split(separator: "_").map { w -> String in
            switch w {
            case "pdu", "cccd": w.uppercased()
            default: w.prefix(1).uppercased() + w.dropFirst()
            }
        }
        return words.joined(separator: " ") + " " + hex
    }
}
