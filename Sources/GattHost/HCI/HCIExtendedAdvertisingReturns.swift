import GattCore

// Return parameters of the extended advertising commands (Core Spec Vol 4 Part E §7.8.53–§7.8.58).

/// LE Set Extended Advertising Parameters [v1] (§7.8.53): the TX power the controller chose, in dBm.
public struct HCISelectedTxPower: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leSetExtendedAdvertisingParameters]
    public static let length = 2
    public var selectedTxPower: Int8
    public init(selectedTxPower: Int8) { self.selectedTxPower = selectedTxPower }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.selectedTxPower = r.i8()
    }
}

/// LE Read Maximum Advertising Data Length (§7.8.57): the most advertising or scan response
/// data one set takes, 31...1650 octets.
public struct HCIMaximumAdvertisingDataLength: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadMaximumAdvertisingDataLength]
    public static let length = 3
    public var maximumAdvertisingDataLength: UInt16
    public init(maximumAdvertisingDataLength: UInt16) { self.maximumAdvertisingDataLength = maximumAdvertisingDataLength }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.maximumAdvertisingDataLength = r.u16()
    }
}

/// LE Read Number of Supported Advertising Sets (§7.8.58): 1...240 sets at most, "a
/// number that may be lower at run time" (the controller shares its memory).
public struct HCINumberOfSupportedAdvertisingSets: HCIReturnParameters, Hashable {
    public static let opcodes: [HCIOpcode] = [.leReadNumberOfSupportedAdvertisingSets]
    public static let length = 2
    public var numberOfSupportedAdvertisingSets: UInt8
    public init(numberOfSupportedAdvertisingSets: UInt8) { self.numberOfSupportedAdvertisingSets = numberOfSupportedAdvertisingSets }
    public init(fields: [UInt8]) {
        var r = CodecByteReader(fields)
        self.numberOfSupportedAdvertisingSets = r.u8()
    }
}
