/// The parameters of LE Set Advertising Parameters (Core Spec Vol 4 Part E §7.8.5),
/// legacy advertising.
public struct AdvertisingParameters: Sendable, Hashable {
    /// Advertising interval in 0.625 ms units, 0x0020 (20 ms) ... 0x4000 (10.24 s).
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var advertisingType: AdvertisingType
    public var ownAddressType: BluetoothAddressType
    /// Only meaningful for directed advertising.
    public var peerAddressType: BluetoothAddressType
    public var peerAddress: BluetoothAddress
    /// Bit 0: channel 37, bit 1: 38, bit 2: 39.
    public var channelMap: UInt8
    /// 0x00: process scan and connection requests from all devices.
    public var filterPolicy: UInt8

    public init(
        intervalMin: UInt16, intervalMax: UInt16, advertisingType: AdvertisingType,
        ownAddressType: BluetoothAddressType = .public, peerAddressType: BluetoothAddressType = .public,
        peerAddress: BluetoothAddress = .zero, channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0x00
    ) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }

    /// The 15 parameter bytes of LE Set Advertising Parameters.
    public var encoded: [UInt8] {
        var w = CodecByteWriter(capacity: 15)
        w.u16(intervalMin)
        w.u16(intervalMax)
        w.u8(advertisingType.rawValue)
        w.u8(ownAddressType.rawValue)
        w.u8(peerAddressType.rawValue)
        w.address(peerAddress)
        w.u8(channelMap)
        w.u8(filterPolicy)
        return w.bytes
    }

    /// Milliseconds → 0.625 ms units, rounded to nearest; nil outside 20 ms ... 10.24 s.
    public static func intervalUnits(milliseconds ms: Double) -> UInt16? {
        guard ms.isFinite else { return nil }
        let units = (ms / 0.625).rounded()
        guard units >= 0x0020, units <= 0x4000 else { return nil }
        return UInt16(units)
    }
}
