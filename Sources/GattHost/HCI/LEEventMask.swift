import GattCore

/// LE Set Event Mask bits (Core Spec Vol 4 Part E §7.8.1): bit n enables LE subevent n+1.
public struct LEEventMask: OptionSet, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let connectionComplete = Self(rawValue: 1 << 0)
    public static let connectionUpdateComplete = Self(rawValue: 1 << 2)
    public static let readRemoteFeaturesComplete = Self(rawValue: 1 << 3)
    public static let longTermKeyRequest = Self(rawValue: 1 << 4)
    public static let remoteConnectionParameterRequest = Self(rawValue: 1 << 5)
    public static let dataLengthChange = Self(rawValue: 1 << 6)
    public static let enhancedConnectionComplete = Self(rawValue: 1 << 9)
    public static let phyUpdateComplete = Self(rawValue: 1 << 11)
    /// LE Advertising Set Terminated (subevent 0x12).
    public static let advertisingSetTerminated = Self(rawValue: 1 << 17)
    /// LE Enhanced Connection Complete [v2] (subevent 0x29).
    public static let enhancedConnectionCompleteV2 = Self(rawValue: 1 << 40)

    /// The controller's default after Reset (0x000000000000001F).
    public static let controllerDefault = Self(rawValue: 0x1F)
    /// What an LE peripheral host needs with legacy advertising (legacy Connection Complete,
    /// no enhanced ones).
    public static let lePeripheral: Self = [
        .connectionComplete, .connectionUpdateComplete, .readRemoteFeaturesComplete, .longTermKeyRequest,
        .remoteConnectionParameterRequest, .dataLengthChange, .phyUpdateComplete,
    ]
    /// With extended advertising: also LE Enhanced Connection Complete [v1] (sent instead of
    /// LE Connection Complete, §7.7.65.10) and LE Advertising Set Terminated (§7.7.65.18),
    /// which names the set a connection ended.
    public static let lePeripheralExtendedAdvertising: Self = lePeripheral.union([.enhancedConnectionComplete, .advertisingSetTerminated])
}
