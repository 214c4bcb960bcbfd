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
