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

/// LE Connection Complete, LE Enhanced Connection Complete [v1] and [v2]
/// (Vol 4 Part E §7.7.65.1, §7.7.65.10). The enhanced-only fields are nil for the
/// legacy event; `advertisingHandle`/`syncHandle` are set only by [v2].
public struct LEConnectionComplete: Sendable, Hashable {
    public var status: HCIStatus
    public var handle: UInt16
    public var role: HCIConnectionRole
    public var peerAddressType: BluetoothAddressType
    public var peerAddress: BluetoothAddress
    /// Enhanced only: the local resolvable private address in use, or 00:00:00:00:00:00.
    public var localResolvablePrivateAddress: BluetoothAddress?
    /// Enhanced only: the peer's resolvable private address, or 00:00:00:00:00:00.
    public var peerResolvablePrivateAddress: BluetoothAddress?
    /// Connection interval in 1.25 ms units.
    public var connectionInterval: UInt16
    /// Peripheral latency in connection events.
    public var peripheralLatency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8
    /// [v2] only.
    public var advertisingHandle: UInt8?
    /// [v2] only.
    public var syncHandle: UInt16?

    public init(
        status: HCIStatus, handle: UInt16, role: HCIConnectionRole, peerAddressType: BluetoothAddressType,
        peerAddress: BluetoothAddress, localResolvablePrivateAddress: BluetoothAddress? = nil,
        peerResolvablePrivateAddress: BluetoothAddress? = nil, connectionInterval: UInt16, peripheralLatency: UInt16,
        supervisionTimeout: UInt16, centralClockAccuracy: UInt8, advertisingHandle: UInt8? = nil, syncHandle: UInt16? = nil
    ) {
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.advertisingHandle = advertisingHandle
        self.syncHandle = syncHandle
    }
}

/// An LE Meta event subevent (Core Spec Vol 4 Part E §7.7.65).
public enum HCILEMetaEvent: Sendable, Hashable {
    /// LE Connection Complete (0x01).
    case connectionComplete(LEConnectionComplete)
    /// LE Connection Update Complete (0x03). Units as in `LEConnectionComplete`.
    case connectionUpdateComplete(
        status: HCIStatus, handle: UInt16, connectionInterval: UInt16, peripheralLatency: UInt16,
        supervisionTimeout: UInt16)
    /// LE Read Remote Features Complete (0x04).
    case readRemoteFeaturesComplete(status: HCIStatus, handle: UInt16, features: LEFeatures)
    /// LE Long Term Key Request (0x05).
    case longTermKeyRequest(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16)
    /// LE Remote Connection Parameter Request (0x06).
    case remoteConnectionParameterRequest(handle: UInt16, parameters: LEConnectionParameters)
    /// LE Data Length Change (0x07). Octets 27...251, times in µs.
    case dataLengthChange(handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16)
    /// LE Enhanced Connection Complete [v1] (0x0A).
    case enhancedConnectionComplete(LEConnectionComplete)
    /// LE PHY Update Complete (0x0C). PHY: 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
    case phyUpdateComplete(status: HCIStatus, handle: UInt16, txPHY: UInt8, rxPHY: UInt8)
    /// LE Enhanced Connection Complete [v2] (0x29).
    case enhancedConnectionCompleteV2(LEConnectionComplete)
    /// Any other subevent: code and the parameters after it.
    case unknown(subevent: UInt8, parameters: [UInt8])

    public var subeventCode: UInt8 {
        switch self {
        case .connectionComplete: 0x01
        case .connectionUpdateComplete: 0x03
        case .readRemoteFeaturesComplete: 0x04
        case .longTermKeyRequest: 0x05
        case .remoteConnectionParameterRequest: 0x06
        case .dataLengthChange: 0x07
        case .enhancedConnectionComplete: 0x0A
        case .phyUpdateComplete: 0x0C
        case .enhancedConnectionCompleteV2: 0x29
        case .unknown(let code, _): code
        }
    }

    /// The connection-complete payload of any of the three connection complete subevents.
    public var connectionComplete: LEConnectionComplete? {
        switch self {
        case .connectionComplete(let c), .enhancedConnectionComplete(let c), .enhancedConnectionCompleteV2(let c): c
        default: nil
        }
    }

    /// Decodes the LE Meta event parameters (subevent code first).
    public init(decoding p: [UInt8]) throws(HCIDecodingError) {
        guard let sub = p.first else {
            throw .invalidParameterLength(structure: "LE Meta event", expected: 1, actual: 0)
        }
        func expect(_ n: Int, _ name: String) throws(HCIDecodingError) -> CodecByteReader {
            guard p.count == n else { throw .invalidParameterLength(structure: name, expected: n, actual: p.count) }
            var r = CodecByteReader(p)
            _ = r.u8()
            return r
        }
        switch sub {
        case 0x01:
            var r = try expect(19, "LE Connection Complete")
            self = .connectionComplete(Self.readConnectionComplete(&r, enhanced: false, v2: false))
        case 0x03:
            var r = try expect(10, "LE Connection Update Complete")
            self = .connectionUpdateComplete(
                status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF, connectionInterval: r.u16(),
                peripheralLatency: r.u16(), supervisionTimeout: r.u16())
        case 0x04:
            var r = try expect(12, "LE Read Remote Features Complete")
            self = .readRemoteFeaturesComplete(
                status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF, features: LEFeatures(rawValue: r.u64()))
        case 0x05:
            var r = try expect(13, "LE Long Term Key Request")
            self = .longTermKeyRequest(handle: r.u16() & 0x0FFF, randomNumber: r.u64(), encryptedDiversifier: r.u16())
        case 0x06:
            var r = try expect(11, "LE Remote Connection Parameter Request")
            self = .remoteConnectionParameterRequest(
                handle: r.u16() & 0x0FFF,
                parameters: LEConnectionParameters(
                    intervalMin: r.u16(), intervalMax: r.u16(), latency: r.u16(), supervisionTimeout: r.u16()))
        case 0x07:
            var r = try expect(11, "LE Data Length Change")
            self = .dataLengthChange(
                handle: r.u16() & 0x0FFF, maxTxOctets: r.u16(), maxTxTime: r.u16(), maxRxOctets: r.u16(),
                maxRxTime: r.u16())
        case 0x0A:
            var r = try expect(31, "LE Enhanced Connection Complete")
            self = .enhancedConnectionComplete(Self.readConnectionComplete(&r, enhanced: true, v2: false))
        case 0x0C:
            var r = try expect(6, "LE PHY Update Complete")
            self = .phyUpdateComplete(status: HCIStatus(r.u8()), handle: r.u16() & 0x0FFF, txPHY: r.u8(), rxPHY: r.u8())
        case 0x29:
            var r = try expect(34, "LE Enhanced Connection Complete [v2]")
            self = .enhancedConnectionCompleteV2(Self.readConnectionComplete(&r, enhanced: true, v2: true))
        default:
            self = .unknown(subevent: sub, parameters: Array(p.dropFirst()))
        }
    }

    private static func readConnectionComplete(_ r: inout CodecByteReader, enhanced: Bool, v2: Bool) -> LEConnectionComplete {
        let status = HCIStatus(r.u8())
        let handle = r.u16() & 0x0FFF
        let role = HCIConnectionRole(rawValue: r.u8())
        let peerType = BluetoothAddressType(rawValue: r.u8())
        let peer = r.address()
        let localRPA = enhanced ? r.address() : nil
        let peerRPA = enhanced ? r.address() : nil
        let interval = r.u16()
        let latency = r.u16()
        let timeout = r.u16()
        let sca = r.u8()
        let advHandle = v2 ? r.u8() : nil
        let syncHandle = v2 ? r.u16() : nil
        return LEConnectionComplete(
            status: status, handle: handle, role: role, peerAddressType: peerType, peerAddress: peer,
            localResolvablePrivateAddress: localRPA, peerResolvablePrivateAddress: peerRPA, connectionInterval: interval,
            peripheralLatency: latency, supervisionTimeout: timeout, centralClockAccuracy: sca,
            advertisingHandle: advHandle, syncHandle: syncHandle)
    }

    /// The LE Meta event parameters, subevent code first.
    public var parameters: [UInt8] {
        var w = CodecByteWriter(capacity: 34)
        w.u8(subeventCode)
        switch self {
        case .connectionComplete(let c): Self.write(c, to: &w, enhanced: false, v2: false)
        case .enhancedConnectionComplete(let c): Self.write(c, to: &w, enhanced: true, v2: false)
        case .enhancedConnectionCompleteV2(let c): Self.write(c, to: &w, enhanced: true, v2: true)
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u16(interval)
            w.u16(latency)
            w.u16(timeout)
        case .readRemoteFeaturesComplete(let status, let handle, let features):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u64(features.rawValue)
        case .longTermKeyRequest(let handle, let rand, let ediv):
            w.u16(handle)
            w.u64(rand)
            w.u16(ediv)
        case .remoteConnectionParameterRequest(let handle, let p):
            w.u16(handle)
            w.u16(p.intervalMin)
            w.u16(p.intervalMax)
            w.u16(p.latency)
            w.u16(p.supervisionTimeout)
        case .dataLengthChange(let handle, let txO, let txT, let rxO, let rxT):
            w.u16(handle)
            w.u16(txO)
            w.u16(txT)
            w.u16(rxO)
            w.u16(rxT)
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            w.u8(status.rawValue)
            w.u16(handle)
            w.u8(tx)
            w.u8(rx)
        case .unknown(_, let params): w.append(params)
        }
        return w.bytes
    }

    private static func write(_ c: LEConnectionComplete, to w: inout CodecByteWriter, enhanced: Bool, v2: Bool) {
        w.u8(c.status.rawValue)
        w.u16(c.handle)
        w.u8(c.role.rawValue)
        w.u8(c.peerAddressType.rawValue)
        w.address(c.peerAddress)
        if enhanced {
            w.address(c.localResolvablePrivateAddress ?? .zero)
            w.address(c.peerResolvablePrivateAddress ?? .zero)
        }
        w.u16(c.connectionInterval)
        w.u16(c.peripheralLatency)
        w.u16(c.supervisionTimeout)
        w.u8(c.centralClockAccuracy)
        if v2 {
            w.u8(c.advertisingHandle ?? 0xFF)
            w.u16(c.syncHandle ?? 0xFFFF)
        }
    }
}

/// LE supported features bit mask (Core Spec Vol 6 Part B §4.6).
public struct LEFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let encryption = Self(rawValue: 1 << 0)
    public static let connectionParametersRequestProcedure = Self(rawValue: 1 << 1)
    public static let extendedRejectIndication = Self(rawValue: 1 << 2)
    public static let peripheralInitiatedFeaturesExchange = Self(rawValue: 1 << 3)
    public static let ping = Self(rawValue: 1 << 4)
    public static let dataPacketLengthExtension = Self(rawValue: 1 << 5)
    public static let llPrivacy = Self(rawValue: 1 << 6)
    public static let extendedScanFilterPolicies = Self(rawValue: 1 << 7)
    public static let le2MPHY = Self(rawValue: 1 << 8)
    public static let leCodedPHY = Self(rawValue: 1 << 11)
    public static let extendedAdvertising = Self(rawValue: 1 << 12)
    public static let channelSelectionAlgorithm2 = Self(rawValue: 1 << 14)
}
