/// Legacy advertising PDU type (Core Spec Vol 4 Part E §7.8.5, Advertising_Type).
public enum AdvertisingType: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// Connectable and scannable undirected (ADV_IND).
    case connectableUndirected = 0x00
    /// Connectable high duty cycle directed (ADV_DIRECT_IND).
    case connectableDirectedHighDuty = 0x01
    /// Scannable undirected (ADV_SCAN_IND).
    case scannableUndirected = 0x02
    /// Non-connectable undirected (ADV_NONCONN_IND).
    case nonConnectableUndirected = 0x03
    /// Connectable low duty cycle directed (ADV_DIRECT_IND).
    case connectableDirectedLowDuty = 0x04

    /// True when a scanner may send SCAN_REQ, i.e. the scan response is used.
    public var isScannable: Bool { self == .connectableUndirected || self == .scannableUndirected }
    public var isConnectable: Bool { self != .scannableUndirected && self != .nonConnectableUndirected }

    public var description: String {
        switch self {
        case .connectableUndirected: "ADV_IND"
        case .connectableDirectedHighDuty: "ADV_DIRECT_IND (high duty cycle)"
        case .scannableUndirected: "ADV_SCAN_IND"
        case .nonConnectableUndirected: "ADV_NONCONN_IND"
        case .connectableDirectedLowDuty: "ADV_DIRECT_IND (low duty cycle)"
        }
    }
}
