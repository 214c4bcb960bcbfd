import GattCore

/// The parameters of LE Set Extended Advertising Parameters [v1] (Core Spec Vol 4 Part E
/// §7.8.53): one advertising set's PDU type, interval, addresses and PHYs.
public struct ExtendedAdvertisingParameters: Sendable, Hashable {
    public var advertisingHandle: UInt8
    public var eventProperties: AdvertisingEventProperties
    /// Primary advertising interval in 0.625 ms units, 0x000020 and up (24 bits on the wire).
    public var primaryIntervalMin: UInt32
    public var primaryIntervalMax: UInt32
    /// Bit 0: channel 37, bit 1: 38, bit 2: 39.
    public var primaryChannelMap: UInt8
    public var ownAddressType: BluetoothAddressType
    /// Only meaningful for directed advertising.
    public var peerAddressType: BluetoothAddressType
    public var peerAddress: BluetoothAddress
    /// 0x00: process scan and connection requests from all devices.
    public var filterPolicy: UInt8
    /// In dBm, -127...+20; 0x7F (`noTxPowerPreference`): the controller chooses.
    public var txPower: Int8
    /// LE 1M or LE Coded (legacy PDUs: LE 1M).
    public var primaryPHY: LEPHY
    public var secondaryMaxSkip: UInt8
    public var secondaryPHY: LEPHY
    /// Advertising_SID, 0x00...0x0F.
    public var sid: UInt8
    public var scanRequestNotification: Bool

    /// Advertising_TX_Power 0x7F: "Host has no preference".
    public static let noTxPowerPreference: Int8 = 0x7F

    public init(
        advertisingHandle: UInt8, eventProperties: AdvertisingEventProperties, primaryIntervalMin: UInt32, primaryIntervalMax: UInt32,
        primaryChannelMap: UInt8 = 0x07, ownAddressType: BluetoothAddressType = .public, peerAddressType: BluetoothAddressType = .public,
        peerAddress: BluetoothAddress = .zero, filterPolicy: UInt8 = 0x00, txPower: Int8 = Self.noTxPowerPreference,
        primaryPHY: LEPHY = .le1M, secondaryMaxSkip: UInt8 = 0, secondaryPHY: LEPHY = .le1M, sid: UInt8 = 0,
        scanRequestNotification: Bool = false
    ) {
        self.advertisingHandle = advertisingHandle
        self.eventProperties = eventProperties
        self.primaryIntervalMin = primaryIntervalMin
        self.primaryIntervalMax = primaryIntervalMax
        self.primaryChannelMap = primaryChannelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.filterPolicy = filterPolicy
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryMaxSkip = secondaryMaxSkip
        self.secondaryPHY = secondaryPHY
        self.sid = sid
        self.scanRequestNotification = scanRequestNotification
    }

    /// Set `handle` sending the legacy PDU of `legacy`'s advertising type (Table 7.2) with its
    /// interval, addresses, channels and filter policy: what LE Set Advertising Parameters
    /// would configure, on LE 1M, SID 0, no TX power preference.
    public init(handle: UInt8, legacy p: AdvertisingParameters) {
        self.init(
            advertisingHandle: handle, eventProperties: AdvertisingEventProperties(legacy: p.advertisingType),
            primaryIntervalMin: UInt32(p.intervalMin), primaryIntervalMax: UInt32(p.intervalMax), primaryChannelMap: p.channelMap,
            ownAddressType: p.ownAddressType, peerAddressType: p.peerAddressType, peerAddress: p.peerAddress, filterPolicy: p.filterPolicy)
    }

    /// Set `handle` sending `payloads`: legacy PDUs as `init(handle:legacy:)` configures
    /// them, extended PDUs with their event properties and PHYs; the handle's low four bits
    /// as Advertising_SID, so that scanners tell the sets apart (Vol 6 Part B §2.3.4.6;
    /// legacy PDUs carry none).
    public init(handle: UInt8, payloads: AdvertisingPayloads) {
        self.init(handle: handle, legacy: payloads.parameters)
        sid = handle & 0x0F
        guard case .extended(let primary, let secondary) = payloads.pdus else { return }
        eventProperties = payloads.advertisingEventProperties
        primaryPHY = primary
        secondaryPHY = secondary
    }

    /// The 25 parameter bytes of LE Set Extended Advertising Parameters [v1].
    public var encoded: [UInt8] {
        var w = CodecByteWriter(capacity: 25)
        w.u8(advertisingHandle)
        w.u16(eventProperties.rawValue)
        w.u24(primaryIntervalMin)
        w.u24(primaryIntervalMax)
        w.u8(primaryChannelMap)
        w.u8(ownAddressType.rawValue)
        w.u8(peerAddressType.rawValue)
        w.address(peerAddress)
        w.u8(filterPolicy)
        w.i8(txPower)
        w.u8(primaryPHY.rawValue)
        w.u8(secondaryMaxSkip)
        w.u8(secondaryPHY.rawValue)
        w.u8(sid)
        w.u8(scanRequestNotification ? 1 : 0)
        return w.bytes
    }
}

/// Operation of LE Set Extended Advertising Data and Scan Response Data (Vol 4 Part E
/// §7.8.54, §7.8.55): where this command's data goes in the set's data.
public enum AdvertisingDataOperation: UInt8, Sendable, Hashable {
    case intermediateFragment = 0x00
    case firstFragment = 0x01
    case lastFragment = 0x02
    /// The whole data in one command (the only operation legacy PDUs accept).
    case complete = 0x03
    /// Same data, new Advertising DID (advertising data only, extended PDUs only).
    case unchangedData = 0x04
}

/// Fragment_Preference (Vol 4 Part E §7.8.54): a hint whether the controller may split
/// the data over several PDUs.
public enum AdvertisingFragmentPreference: UInt8, Sendable, Hashable {
    case mayFragment = 0x00
    case minimize = 0x01
}

/// One set of LE Set Extended Advertising Enable (Vol 4 Part E §7.8.56).
public struct AdvertisingSetEnable: Sendable, Hashable {
    public var handle: UInt8
    /// In 10 ms units; 0: until disabled.
    public var duration: UInt16
    /// 0: no maximum.
    public var maxExtendedAdvertisingEvents: UInt8
    public init(handle: UInt8, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
        self.handle = handle
        self.duration = duration
        self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
    }
}

extension HCICommand {
    /// The most data one LE Set Extended Advertising/Scan Response Data command carries:
    /// 255 parameter octets less handle, operation, fragment preference and length.
    public static let maximumExtendedDataFragment = 251

    /// LE Set Extended Advertising Data commands giving set `handle` this data: one Complete
    /// command when it fits (empty data too), else a First, Intermediate… and Last fragment
    /// of at most 251 bytes each (§7.8.54).
    public static func extendedAdvertisingData(
        handle: UInt8, _ data: [UInt8], fragmentPreference: AdvertisingFragmentPreference = .minimize
    ) -> [HCICommand] {
        fragments(data).map { .leSetExtendedAdvertisingData(handle: handle, operation: $0.0, fragmentPreference: fragmentPreference, data: $0.1) }
    }

    /// LE Set Extended Scan Response Data commands for this data, split as
    /// `extendedAdvertisingData` splits (§7.8.55).
    public static func extendedScanResponseData(
        handle: UInt8, _ data: [UInt8], fragmentPreference: AdvertisingFragmentPreference = .minimize
    ) -> [HCICommand] {
        fragments(data).map { .leSetExtendedScanResponseData(handle: handle, operation: $0.0, fragmentPreference: fragmentPreference, data: $0.1) }
    }

    private static func fragments(_ data: [UInt8]) -> [(AdvertisingDataOperation, [UInt8])] {
        let n = maximumExtendedDataFragment
        guard data.count > n else { return [(.complete, data)] }
        return stride(from: 0, to: data.count, by: n).map { start in
            let end = min(start + n, data.count)
            let operation: AdvertisingDataOperation = start == 0 ? .firstFragment : end == data.count ? .lastFragment : .intermediateFragment
            return (operation, Array(data[start..<end]))
        }
    }

    /// The parameters of an LE Set Extended Advertising / Scan Response Data command.
    static func writeExtendedData(
        _ w: inout CodecByteWriter, handle: UInt8, operation: AdvertisingDataOperation, preference: AdvertisingFragmentPreference, data: [UInt8]
    ) {
        let fragment = data.prefix(maximumExtendedDataFragment)
        w.u8(handle)
        w.u8(operation.rawValue)
        w.u8(preference.rawValue)
        w.u8(UInt8(fragment.count))
        w.append(fragment)
    }

    /// The parameters of LE Set Extended Advertising Enable: per set handle, duration and
    /// maximum events, interleaved (Vol 4 Part E §5.2); at most 63 sets fit.
    static func writeExtendedEnable(_ w: inout CodecByteWriter, enable: Bool, sets: [AdvertisingSetEnable]) {
        let written = sets.prefix(63)
        w.u8(enable ? 1 : 0)
        w.u8(UInt8(written.count))
        for s in written {
            w.u8(s.handle)
            w.u16(s.duration)
            w.u8(s.maxExtendedAdvertisingEvents)
        }
    }
}
