import GattCore

/// An HCI event from the controller (Core Spec Vol 4 Part E §7.7).
///
/// `HCIEvent(decoding:)` takes the event packet without the H4 indicator (event
/// code, parameter length, parameters). Known events are checked strictly: the
/// length byte must match the bytes present and fixed-size events must have their
/// exact size, else `HCIDecodingError`. Unknown event codes and LE subevents are
/// preserved as `.unknown` / `HCILEMetaEvent.unknown`.
public enum HCIEvent: Sendable, Hashable {
    /// Disconnection Complete (0x05, §7.7.5).
    case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
    /// Encryption Change [v1] (0x08, §7.7.8). `enabled`: 0x00 off, 0x01 on (AES-CCM for LE).
    case encryptionChange(status: HCIStatus, handle: UInt16, enabled: UInt8)
    /// Command Complete (0x0E, §7.7.14).
    case commandComplete(HCICommandComplete)
    /// Command Status (0x0F, §7.7.15).
    case commandStatus(status: HCIStatus, numHCICommandPackets: UInt8, opcode: HCIOpcode)
    /// Hardware Error (0x10, §7.7.16).
    case hardwareError(code: UInt8)
    /// Number Of Completed Packets (0x13, §7.7.19).
    case numberOfCompletedPackets([HCICompletedPackets])
    /// Data Buffer Overflow (0x1A, §7.7.26). Link type 0x01: ACL.
    case dataBufferOverflow(linkType: UInt8)
    /// Encryption Key Refresh Complete (0x30, §7.7.39).
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    /// LE Meta event (0x3E, §7.7.65).
    case leMeta(HCILEMetaEvent)
    /// Any other event, kept as code and raw parameters.
    case unknown(code: UInt8, parameters: [UInt8])

    public static let disconnectionCompleteCode: UInt8 = 0x05
    public static let encryptionChangeCode: UInt8 = 0x08
    public static let commandCompleteCode: UInt8 = 0x0E
    public static let commandStatusCode: UInt8 = 0x0F
    public static let hardwareErrorCode: UInt8 = 0x10
    public static let numberOfCompletedPacketsCode: UInt8 = 0x13
    public static let dataBufferOverflowCode: UInt8 = 0x1A
    public static let encryptionKeyRefreshCompleteCode: UInt8 = 0x30
    public static let leMetaCode: UInt8 = 0x3E

    /// The event code.
    public var code: UInt8 {
        switch self {
        case .disconnectionComplete: Self.disconnectionCompleteCode
        case .encryptionChange: Self.encryptionChangeCode
        case .commandComplete: Self.commandCompleteCode
        case .commandStatus: Self.commandStatusCode
        case .hardwareError: Self.hardwareErrorCode
        case .numberOfCompletedPackets: Self.numberOfCompletedPacketsCode
        case .dataBufferOverflow: Self.dataBufferOverflowCode
        case .encryptionKeyRefreshComplete: Self.encryptionKeyRefreshCompleteCode
        case .leMeta: Self.leMetaCode
        case .unknown(let code, _): code
        }
    }

    /// Decodes an event packet: event code, parameter total length, parameters.
    public init(decoding packet: [UInt8]) throws(HCIDecodingError) {
        guard packet.count >= 2 else {
            throw .truncatedHeader(packet: "HCI event", needed: 2, actual: packet.count)
        }
        let code = packet[0]
        let declared = Int(packet[1])
        guard packet.count - 2 == declared else {
            throw .lengthMismatch(packet: "HCI event \(codecHex(code, digits: 2))", declared: declared, actual: packet.count - 2)
        }
        try self.init(code: code, parameters: Array(packet[2...]))
    }

    /// Decodes an event from its code and parameters (length already checked by the caller).
    public init(code: UInt8, parameters p: [UInt8]) throws(HCIDecodingError) {
        func expect(_ n: Int, _ name: String) throws(HCIDecodingError) -> CodecByteReader {
            guard p.count == n else { throw .invalidParameterLength(structure: name, expected: n, actual: p.count) }
            return CodecByteReader(p)
        }
        switch code {
        case Self.disconnectionCompleteCode:
            var r = try expect(4, "Disconnection Complete")
            self = .disconnectionComplete(status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF, reason: HCIStatus(r.u8()))
        case Self.encryptionChangeCode:
            var r = try expect(4, "Encryption Change")
            self = .encryptionChange(status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF, enabled: r.u8())
        case Self.commandCompleteCode:
            guard p.count >= 3 else {
                throw .invalidParameterLength(structure: "Command Complete", expected: 3, actual: p.count)
            }
            var r = CodecByteReader(p)
            self = .commandComplete(
                HCICommandComplete(
                    numHCICommandPackets: r.u8(), opcode: HCIOpcode(rawValue: r.u16()), returnParameters: r.rest()))
        case Self.commandStatusCode:
            var r = try expect(4, "Command Status")
            self = .commandStatus(status: HCIStatus(r.u8()), numHCICommandPackets: r.u8(), opcode: HCIOpcode(rawValue: r.u16()))
        case Self.hardwareErrorCode:
            var r = try expect(1, "Hardware Error")
            self = .hardwareError(code: r.u8())
        case Self.numberOfCompletedPacketsCode:
            let n = Int(p.first ?? 0)
            var r = try expect(1 + 4 * n, "Number Of Completed Packets")
            _ = r.u8()
            var entries: [HCICompletedPackets] = []
            for _ in 0..<n { entries.append(HCICompletedPackets(handle: r.u16() & 0x0FFF, count: r.u16())) }
            self = .numberOfCompletedPackets(entries)
        case Self.dataBufferOverflowCode:
            var r = try expect(1, "Data Buffer Overflow")
            self = .dataBufferOverflow(linkType: r.u8())
        case Self.encryptionKeyRefreshCompleteCode:
            var r = try expect(3, "Encryption Key Refresh Complete")
            self = .encryptionKeyRefreshComplete(status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF)
        case Self.leMetaCode:
            self = .leMeta(try HCILEMetaEvent(decoding: p))
        default:
            self = .unknown(code: code, parameters: p)
        }
    }

    /// The event parameters (without code and length).
    public var parameters: [UInt8] {
        var w = CodecByteWriter()
        switch self {
        case .disconnectionComplete(let status, let handle, let reason):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(reason.rawValue)
        case .encryptionChange(let status, let handle, let enabled):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(enabled)
        case .commandComplete(let c):
            w.u8(c.numHCICommandPackets)
            w.u16(c.opcode.rawValue)
            w.append(c.returnParameters)
        case .commandStatus(let status, let num, let opcode):
            w.u8(status.rawValue)
            w.u8(num)
            w.u16(opcode.rawValue)
        case .hardwareError(let code): w.u8(code)
        case .numberOfCompletedPackets(let entries):
            let written = entries.prefix(63)  // 1 + 4 × 63 = 253: what fits in 255 parameter bytes
            w.u8(UInt8(written.count))
            for e in written {
                w.u16(e.handle)
                w.u16(e.count)
            }
        case .dataBufferOverflow(let linkType): w.u8(linkType)
        case .encryptionKeyRefreshComplete(let status, let handle):
            w.u8(status.rawValue)
            w.u16(handle)
        case .leMeta(let e): w.append(e.parameters)
        case .unknown(_, let params): w.append(params)
        }
        return w.bytes
    }

    /// The event packet (code, length, parameters; at most 255 parameter bytes), as a
    /// controller would send it. Used by tests and simulated controllers.
    public func encoded() -> [UInt8] {
        let params = parameters.prefix(255)
        return [code, UInt8(params.count)] + params
    }
}

/// One entry of Number Of Completed Packets.
public struct HCICompletedPackets: Sendable, Hashable {
    public var handle: UInt16
    public var count: UInt16
    public init(handle: UInt16, count: UInt16) { self.handle = handle; self.count = count }
}

/// The role of the local device in a new connection (Vol 4 Part E §7.7.65.1).
public struct HCIConnectionRole: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let central = Self(rawValue: 0x00)
    public static let peripheral = Self(rawValue: 0x01)
    public var description: String {
        switch rawValue {
        case 0: "central"
        case 1: "peripheral"
        default: "role \(codecHex(rawValue, digits: 2))"
        }
    }
}
