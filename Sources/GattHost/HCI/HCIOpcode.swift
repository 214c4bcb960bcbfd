import GattCore

/// An HCI command opcode: OGF (6 bits) and OCF (10 bits), little-endian on the
/// wire (Core Spec Vol 4 Part E §5.4.1).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public init(ogf: UInt8, ocf: UInt16) {
        self.rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF)
    }

    public var ogf: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x03FF }

    // Link Control (OGF 0x01)
    public static let disconnect = Self(ogf: 0x01, ocf: 0x0006)
    // Controller & Baseband (OGF 0x03)
    public static let setEventMask = Self(ogf: 0x03, ocf: 0x0001)
    public static let reset = Self(ogf: 0x03, ocf: 0x0003)
    // Informational (OGF 0x04)
    public static let readLocalVersionInformation = Self(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = Self(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = Self(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = Self(ogf: 0x04, ocf: 0x0005)
    public static let readBDADDR = Self(ogf: 0x04, ocf: 0x0009)
    // LE Controller (OGF 0x08)
    public static let leSetEventMask = Self(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = Self(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = Self(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = Self(ogf: 0x08, ocf: 0x0005)
    public static let leSetAdvertisingParameters = Self(ogf: 0x08, ocf: 0x0006)
    public static let leReadAdvertisingPhysicalChannelTxPower = Self(ogf: 0x08, ocf: 0x0007)
    public static let leSetAdvertisingData = Self(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = Self(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = Self(ogf: 0x08, ocf: 0x000A)
    public static let leConnectionUpdate = Self(ogf: 0x08, ocf: 0x0013)
    public static let leLongTermKeyRequestReply = Self(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = Self(ogf: 0x08, ocf: 0x001B)
    public static let leRemoteConnectionParameterRequestReply = Self(ogf: 0x08, ocf: 0x0020)
    public static let leRemoteConnectionParameterRequestNegativeReply = Self(ogf: 0x08, ocf: 0x0021)
    public static let leSetDataLength = Self(ogf: 0x08, ocf: 0x0022)
    public static let leReadSuggestedDefaultDataLength = Self(ogf: 0x08, ocf: 0x0023)
    public static let leWriteSuggestedDefaultDataLength = Self(ogf: 0x08, ocf: 0x0024)
    public static let leReadMaximumDataLength = Self(ogf: 0x08, ocf: 0x002F)
    public static let leReadPHY = Self(ogf: 0x08, ocf: 0x0030)
    public static let leSetDefaultPHY = Self(ogf: 0x08, ocf: 0x0031)
    public static let leSetPHY = Self(ogf: 0x08, ocf: 0x0032)
    public static let leSetAdvertisingSetRandomAddress = Self(ogf: 0x08, ocf: 0x0035)
    public static let leSetExtendedAdvertisingParameters = Self(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = Self(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedScanResponseData = Self(ogf: 0x08, ocf: 0x0038)
    public static let leSetExtendedAdvertisingEnable = Self(ogf: 0x08, ocf: 0x0039)
    public static let leReadMaximumAdvertisingDataLength = Self(ogf: 0x08, ocf: 0x003A)
    public static let leReadNumberOfSupportedAdvertisingSets = Self(ogf: 0x08, ocf: 0x003B)
    public static let leRemoveAdvertisingSet = Self(ogf: 0x08, ocf: 0x003C)
    public static let leClearAdvertisingSets = Self(ogf: 0x08, ocf: 0x003D)
    public static let leReadBufferSizeV2 = Self(ogf: 0x08, ocf: 0x0060)

    /// The specification's command name, or nil for an opcode this codec does not know.
    public var name: String? { Self.known[self]?.name }

    /// "LE Set Advertising Parameters" or "opcode 0x2006" for unknown ones.
    public var description: String { name ?? "opcode \(codecHex(rawValue, digits: 4))" }

    /// Octet and bit of this command in the Supported_Commands bit mask
    /// (Core Spec Vol 4 Part E §6.27), when it has one. Read Local Supported
    /// Commands has none: every controller supports it.
    public var supportedCommandsBit: (octet: Int, bit: Int)? {
        guard let entry = Self.known[self], let octet = entry.octet else { return nil }
        return (octet, entry.bit)
    }

    private struct Entry {
        let name: String
        let octet: Int?
        let bit: Int
    }

    private static let known: [HCIOpcode: Entry] = [
        .disconnect: Entry(name: "Disconnect", octet: 0, bit: 5),
        .setEventMask: Entry(name: "Set Event Mask", octet: 5, bit: 6),
        .reset: Entry(name: "Reset", octet: 5, bit: 7),
        .readLocalVersionInformation: Entry(name: "Read Local Version Information", octet: 14, bit: 3),
        .readLocalSupportedCommands: Entry(name: "Read Local Supported Commands", octet: nil, bit: 0),
        .readLocalSupportedFeatures: Entry(name: "Read Local Supported Features", octet: 14, bit: 5),
        .readBufferSize: Entry(name: "Read Buffer Size", octet: 14, bit: 7),
        .readBDADDR: Entry(name: "Read BD_ADDR", octet: 15, bit: 1),
        .leSetEventMask: Entry(name: "LE Set Event Mask", octet: 25, bit: 0),
        .leReadBufferSize: Entry(name: "LE Read Buffer Size", octet: 25, bit: 1),
        .leReadLocalSupportedFeatures: Entry(name: "LE Read Local Supported Features", octet: 25, bit: 2),
        .leSetRandomAddress: Entry(name: "LE Set Random Address", octet: 25, bit: 4),
        .leSetAdvertisingParameters: Entry(name: "LE Set Advertising Parameters", octet: 25, bit: 5),
        .leReadAdvertisingPhysicalChannelTxPower: Entry(
            name: "LE Read Advertising Physical Channel Tx Power", octet: 25, bit: 6),
        .leSetAdvertisingData: Entry(name: "LE Set Advertising Data", octet: 25, bit: 7),
        .leSetScanResponseData: Entry(name: "LE Set Scan Response Data", octet: 26, bit: 0),
        .leSetAdvertisingEnable: Entry(name: "LE Set Advertising Enable", octet: 26, bit: 1),
        .leConnectionUpdate: Entry(name: "LE Connection Update", octet: 27, bit: 2),
        .leLongTermKeyRequestReply: Entry(name: "LE Long Term Key Request Reply", octet: 28, bit: 1),
        .leLongTermKeyRequestNegativeReply: Entry(name: "LE Long Term Key Request Negative Reply", octet: 28, bit: 2),
        .leRemoteConnectionParameterRequestReply: Entry(
            name: "LE Remote Connection Parameter Request Reply", octet: 33, bit: 4),
        .leRemoteConnectionParameterRequestNegativeReply: Entry(
            name: "LE Remote Connection Parameter Request Negative Reply", octet: 33, bit: 5),
        .leSetDataLength: Entry(name: "LE Set Data Length", octet: 33, bit: 6),
        .leReadSuggestedDefaultDataLength: Entry(name: "LE Read Suggested Default Data Length", octet: 33, bit: 7),
        .leWriteSuggestedDefaultDataLength: Entry(name: "LE Write Suggested Default Data Length", octet: 34, bit: 0),
        .leReadMaximumDataLength: Entry(name: "LE Read Maximum Data Length", octet: 35, bit: 3),
        .leReadPHY: Entry(name: "LE Read PHY", octet: 35, bit: 4),
        .leSetDefaultPHY: Entry(name: "LE Set Default PHY", octet: 35, bit: 5),
        .leSetPHY: Entry(name: "LE Set PHY", octet: 35, bit: 6),
        .leSetAdvertisingSetRandomAddress: Entry(name: "LE Set Advertising Set Random Address", octet: 36, bit: 1),
        .leSetExtendedAdvertisingParameters: Entry(name: "LE Set Extended Advertising Parameters", octet: 36, bit: 2),
        .leSetExtendedAdvertisingData: Entry(name: "LE Set Extended Advertising Data", octet: 36, bit: 3),
        .leSetExtendedScanResponseData: Entry(name: "LE Set Extended Scan Response Data", octet: 36, bit: 4),
        .leSetExtendedAdvertisingEnable: Entry(name: "LE Set Extended Advertising Enable", octet: 36, bit: 5),
        .leReadMaximumAdvertisingDataLength: Entry(name: "LE Read Maximum Advertising Data Length", octet: 36, bit: 6),
        .leReadNumberOfSupportedAdvertisingSets: Entry(
            name: "LE Read Number of Supported Advertising Sets", octet: 36, bit: 7),
        .leRemoveAdvertisingSet: Entry(name: "LE Remove Advertising Set", octet: 37, bit: 0),
        .leClearAdvertisingSets: Entry(name: "LE Clear Advertising Sets", octet: 37, bit: 1),
        .leReadBufferSizeV2: Entry(name: "LE Read Buffer Size [v2]", octet: 41, bit: 5),
    ]
}
