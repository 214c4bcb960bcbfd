import GattCore

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
    /// LE Advertising Set Terminated (0x12, §7.7.65.18): a set stopped advertising. Success:
    /// a connection (`connectionHandle`, reported first) was made from it; Advertising
    /// Timeout (0x3C) or Limit Reached (0x43): its duration or event count ran out.
    case advertisingSetTerminated(
        status: HCIStatus, advertisingHandle: UInt8, connectionHandle: UInt16, completedExtendedAdvertisingEvents: UInt8)
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
        case .advertisingSetTerminated: 0x12
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
        case 0x12:
            var r = try expect(6, "LE Advertising Set Terminated")
            self = .advertisingSetTerminated(
                status: HCIStatus(r.u8()), advertisingHandle: r.u8(), connectionHandle: r.u16() & 0x0FFF,
                completedExtendedAdvertisingEvents: r.u8())
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
        case .advertisingSetTerminated(let status, let advertisingHandle, let connectionHandle, let completed):
            w.u8(status.rawValue)
            w.u8(advertisingHandle)
            w.u16(connectionHandle)
            w.u8(completed)
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
