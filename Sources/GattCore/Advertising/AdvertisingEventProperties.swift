/// Advertising_Event_Properties (Core Spec Vol 4 Part E §7.8.53): the kind of PDUs a set sends.
public struct AdvertisingEventProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = Self(rawValue: 1 << 0)
    public static let scannable = Self(rawValue: 1 << 1)
    public static let directed = Self(rawValue: 1 << 2)
    public static let highDutyCycleDirected = Self(rawValue: 1 << 3)
    /// Legacy advertising PDUs (ADV_IND, ADV_SCAN_IND...): seen by every scanner, 31 bytes of data.
    public static let legacy = Self(rawValue: 1 << 4)
    public static let anonymous = Self(rawValue: 1 << 5)
    public static let includeTxPower = Self(rawValue: 1 << 6)

    /// The properties of each legacy advertising type (Table 7.2): ADV_IND 0x0013,
    /// ADV_DIRECT_IND low duty cycle 0x0015, high 0x001D, ADV_SCAN_IND 0x0012, ADV_NONCONN_IND 0x0010.
    public init(legacy type: AdvertisingType) {
        switch type {
        case .connectableUndirected: self = [.legacy, .connectable, .scannable]
        case .connectableDirectedLowDuty: self = [.legacy, .connectable, .directed]
        case .connectableDirectedHighDuty: self = [.legacy, .connectable, .directed, .highDutyCycleDirected]
        case .scannableUndirected: self = [.legacy, .scannable]
        case .nonConnectableUndirected: self = [.legacy]
        }
    }

    /// Whether the set's PDUs carry advertising data: legacy undirected, or extended not scannable.
    public var carriesAdvertisingData: Bool {
        contains(.legacy) ? !contains(.directed) : !contains(.scannable)
    }
}
