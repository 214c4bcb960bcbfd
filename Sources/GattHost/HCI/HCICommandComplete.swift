import GattCore

/// The Command Complete event (Core Spec Vol 4 Part E §7.7.14): the controller's
/// answer to most commands. `returnParameters` are decoded with the typed
/// accessors below, which check the opcode, the status and the exact length.
public struct HCICommandComplete: Sendable, Hashable {
    /// How many commands the host may now send (flow control).
    public var numHCICommandPackets: UInt8
    /// The command this completes; 0x0000 is a pure credit update.
    public var opcode: HCIOpcode
    public var returnParameters: [UInt8]

    public init(numHCICommandPackets: UInt8, opcode: HCIOpcode, returnParameters: [UInt8]) {
        self.numHCICommandPackets = numHCICommandPackets
        self.opcode = opcode
        self.returnParameters = returnParameters
    }

    /// The status byte (the first return parameter of every command this codec knows), if any.
    public var status: HCIStatus? { returnParameters.first.map(HCIStatus.init(rawValue:)) }

    /// Decodes the return parameters as `T` (for `T.opcodes`): throws
    /// `.unexpectedOpcode` if the event answers another command, `.commandFailed`
    /// if the status is not Success, `.invalidParameterLength` if the length is wrong.
    public func decode<T: HCIReturnParameters>(_ type: T.Type = T.self) throws(HCIDecodingError) -> T {
        guard T.opcodes.contains(opcode) else {
            throw .unexpectedOpcode(expected: T.opcodes.first ?? opcode, actual: opcode)
        }
        guard let status else {
            throw .invalidParameterLength(structure: "\(opcode) return parameters", expected: T.length, actual: 0)
        }
        guard status.isSuccess else { throw .commandFailed(opcode, status) }
        guard returnParameters.count == T.length else {
            throw .invalidParameterLength(
                structure: "\(opcode) return parameters", expected: T.length, actual: returnParameters.count)
        }
        return T(fields: Array(returnParameters.dropFirst()))
    }

    /// For commands whose only return parameter is the status (Reset, Set Event Mask,
    /// LE Set Advertising *, ...): throws `.commandFailed` unless Success.
    /// Extra return parameters (e.g. a connection handle) are ignored.
    public func checkStatus() throws(HCIDecodingError) {
        guard let status else {
            throw .invalidParameterLength(structure: "\(opcode) return parameters", expected: 1, actual: 0)
        }
        guard status.isSuccess else { throw .commandFailed(opcode, status) }
    }
}

/// Typed return parameters of a Command Complete event. `length` includes the status byte.
public protocol HCIReturnParameters: Sendable {
    /// The commands whose Command Complete carries this structure.
    static var opcodes: [HCIOpcode] { get }
    /// Total return-parameter length including the leading status byte.
    static var length: Int { get }
    /// Decodes the fields after the status byte; `fields.count` is `length - 1`
    /// (checked by `HCICommandComplete.decode`). Shorter input reads as zeros.
    init(fields: [UInt8])
}

/// Read Local Version Information (§7.4.1).
extension HCILocalVersionInformation: HCIReturnParameters {
    public static let opcodes: [HCIOpcode] = [.readLocalVersionInformation]
    public static let length = 9
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.init(hciVersion: r.u8(), hciSubversion: r.u16(), lmpVersion: r.u8(), companyIdentifier: r.u16(), lmpSubversion: r.u16())
    }
}

/// Read BD_ADDR (§7.4.6).
public struct HCIReadBDADDR: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.readBDADDR]
    public static let length = 7
    public var address: BluetoothAddress
    public init(address: BluetoothAddress) { self.address = address }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.address = r.address() }
}

/// Read Buffer Size (§7.4.5): the shared (BR/EDR and, when LE has none of its own, LE) ACL buffers.
public struct HCIBufferSize: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.readBufferSize]
    public static let length = 8
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16
    public init(aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8, totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16) {
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
       
        self.init(aclDataPacketLength: r.u16(), synchronousDataPacketLength: r.u8(), totalNumACLDataPackets: r.u16(), totalNumSynchronousDataPackets: r.u16())
    }
}

/// LE Read Buffer Size [v1] (§7.8.2). A length or count of 0 means "no dedicated LE
/// buffers: use Read Buffer Size".
public struct HCILEBufferSize: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadBufferSize]
    public static let length = 4
    public var leACLDataPacketLength: UInt16
    public var totalNumLEACLDataPackets: UInt8
    public init(leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
        self.leACLDataPacketLength = leACLDataPacketLength
        self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
    }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.init(leACLDataPacketLength: r.u16(), totalNumLEACLDataPackets: r.u8()) }
}

/// LE Read Buffer Size [v2] (§7.8.2): LE ACL and ISO buffers.
public struct HCILEBufferSizeV2: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadBufferSizeV2]
    public static let length = 7
    public var leACLDataPacketLength: UInt16
    public var totalNumLEACLDataPackets: UInt8
    public var isoDataPacketLength: UInt16
    public var totalNumISODataPackets: UInt8
    public init(leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8, isoDataPacketLength: UInt16, totalNumISODataPackets: UInt8) {
        self.leACLDataPacketLength = leACLDataPacketLength
        self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        self.isoDataPacketLength = isoDataPacketLength
        self.totalNumISODataPackets = totalNumISODataPackets
    }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
       
        self.init(leACLDataPacketLength: r.u16(), totalNumLEACLDataPackets: r.u8(), isoDataPacketLength: r.u16(), totalNumISODataPackets: r.u8())
    }
}

/// Read Local Supported Commands (§7.4.2, bit mask layout §6.27).
public struct HCISupportedCommands: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.readLocalSupportedCommands]
    public static let length = 65
    /// The 64-octet Supported_Commands mask.
    public var octets: [UInt8]
    public init(octets: [UInt8]) { self.octets = octets }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.octets = r.bytes(64) }

    /// Whether the controller reports `opcode` as supported. Read Local Supported
    /// Commands is always supported; an opcode this codec has no bit for is reported
    /// as unsupported.
    public func isSupported(_ opcode: HCIOpcode) -> Bool {
        if opcode == .readLocalSupportedCommands { return true }
        guard let (octet, bit) = opcode.supportedCommandsBit, octet < octets.count else { return false }
        return octets[octet] & (1 << UInt8(bit)) != 0
    }
}

/// Read Local Supported Features (§7.4.3): the LMP feature mask (bit 38 "LE Supported (Controller)").
public struct HCILocalSupportedFeatures: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.readLocalSupportedFeatures]
    public static let length = 9
    public var lmpFeatures: UInt64
    public init(lmpFeatures: UInt64) { self.lmpFeatures = lmpFeatures }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.lmpFeatures = r.u64() }
    /// LMP feature bit 38: LE Supported (Controller).
    public var leSupported: Bool { lmpFeatures & (1 << 38) != 0 }
}

/// LE Read Local Supported Features (§7.8.3).
public struct HCILELocalSupportedFeatures: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadLocalSupportedFeatures]
    public static let length = 9
    public var features: LEFeatures
    public init(features: LEFeatures) { self.features = features }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.features = LEFeatures(rawValue: r.u64()) }
}

/// LE Read Advertising Physical Channel Tx Power (§7.8.6), in dBm.
public struct HCIAdvertisingTxPower: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadAdvertisingPhysicalChannelTxPower]
    public static let length = 2
    public var txPowerLevel: Int8
    public init(txPowerLevel: Int8) { self.txPowerLevel = txPowerLevel }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.txPowerLevel = r.i8() }
}

/// LE Read Suggested Default Data Length (§7.8.34).
public struct HCISuggestedDefaultDataLength: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadSuggestedDefaultDataLength]
    public static let length = 5
    public var maxTxOctets: UInt16
    public var maxTxTime: UInt16
    public init(maxTxOctets: UInt16, maxTxTime: UInt16) { self.maxTxOctets = maxTxOctets; self.maxTxTime = maxTxTime }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.init(maxTxOctets: r.u16(), maxTxTime: r.u16()) }
}

/// LE Read Maximum Data Length (§7.8.46).
public struct HCIMaximumDataLength: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadMaximumDataLength]
    public static let length = 9
    public var maxTxOctets: UInt16
    public var maxTxTime: UInt16
    public var maxRxOctets: UInt16
    public var maxRxTime: UInt16
    public init(maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16) {
        self.maxTxOctets = maxTxOctets
        self.maxTxTime = maxTxTime
        self.maxRxOctets = maxRxOctets
        self.maxRxTime = maxRxTime
    }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
       
        self.init(maxTxOctets: r.u16(), maxTxTime: r.u16(), maxRxOctets: r.u16(), maxRxTime: r.u16())
    }
}

/// Return parameters that are a status and a connection handle: LE Set Data Length,
/// LE Long Term Key Request (Negative) Reply, LE Remote Connection Parameter Request
/// (Negative) Reply.
public struct HCIConnectionHandleReturn: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [
        .leSetDataLength, .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply,
        .leRemoteConnectionParameterRequestNegativeReply,
    ]
    public static let length = 3
    public var handle: UInt16
    public init(handle: UInt16) { self.handle = handle }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.handle = r.u16() & 0x0FFF }
}
