import GattCore

/// An L2CAP channel identifier (Core Spec Vol 3 Part A §2.1). LE fixed channels
/// are named; dynamic channels are 0x0040...0x007F on LE.
public struct L2CAPChannelID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// Attribute Protocol.
    public static let att = Self(0x0004)
    /// LE L2CAP signalling channel.
    public static let leSignalling = Self(0x0005)
    /// Security Manager Protocol.
    public static let smp = Self(0x0006)

    public var description: String {
        switch rawValue {
        case 0x0004: "ATT"
        case 0x0005: "LE signalling"
        case 0x0006: "SMP"
        default: "CID \(codecHex(rawValue, digits: 4))"
        }
    }
}

/// An L2CAP B-frame (basic information frame, Core Spec Vol 3 Part A §3.1):
/// 16-bit payload length, 16-bit channel ID, payload; little-endian.
public struct L2CAPBasicFrame: Sendable, Hashable {
    public static let headerLength = 4
    /// The largest payload the 16-bit length field can describe.
    public static let maximumPayloadLength = 0xFFFF

    public var channelID: L2CAPChannelID
    public var payload: [UInt8]

    public init(channelID: L2CAPChannelID, payload: [UInt8]) {
        self.channelID = channelID
        self.payload = payload
    }

    /// Decodes a complete frame; the length field must match the payload present.
    public init(decoding bytes: [UInt8]) throws(L2CAPDecodingError) {
        guard bytes.count >= Self.headerLength else {
            throw .truncated(structure: "L2CAP basic frame", needed: Self.headerLength, actual: bytes.count)
        }
        let declared = Int(bytes[0]) | Int(bytes[1]) << 8
        guard bytes.count - Self.headerLength == declared else {
            throw .lengthMismatch(structure: "L2CAP basic frame", declared: declared, actual: bytes.count - Self.headerLength)
        }
        self.channelID = L2CAPChannelID(UInt16(bytes[2]) | UInt16(bytes[3]) << 8)
        self.payload = Array(bytes[Self.headerLength...])
    }

    /// Header and payload. Throws `.payloadTooLong` above 65,535 payload bytes.
    public func encoded() throws(L2CAPDecodingError) -> [UInt8] {
        guard payload.count <= Self.maximumPayloadLength else {
            throw .payloadTooLong(length: payload.count, maximum: Self.maximumPayloadLength)
        }
        var w = CodecByteWriter(capacity: Self.headerLength + payload.count)
        w.u16(UInt16(payload.count))
        w.u16(channelID.rawValue)
        w.append(payload)
        return w.bytes
    }
}

/// Why L2CAP, signalling or SMP bytes could not be decoded or encoded.
public enum L2CAPDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than the structure's header needs.
    case truncated(structure: String, needed: Int, actual: Int)
    /// A length field disagrees with the bytes present.
    case lengthMismatch(structure: String, declared: Int, actual: Int)
    /// A known command with the wrong data length.
    case invalidDataLength(structure: String, expected: Int, actual: Int)
    /// A payload too long for a 16-bit length field.
    case payloadTooLong(length: Int, maximum: Int)

    public var description: String {
        switch self {
        case .truncated(let s, let needed, let actual): "\(s): \(actual) bytes, shorter than its \(needed)-byte header"
        case .lengthMismatch(let s, let declared, let actual): "\(s): length field says \(declared) bytes but \(actual) follow"
        case .invalidDataLength(let s, let expected, let actual): "\(s): expected \(expected) data bytes, got \(actual)"
        case .payloadTooLong(let length, let maximum): "L2CAP payload of \(length) bytes exceeds \(maximum)"
        }
    }
}
