/// An LE PHY, with its HCI value: a connection's (Core Spec Vol 4 Part E §7.7.65.12) or an
/// advertising set's (§7.8.53 Primary_Advertising_PHY, where LE 2M is not allowed, and
/// Secondary_Advertising_PHY). 0x01 LE 1M, 0x02 LE 2M, 0x03 LE Coded.
public enum LEPHY: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case le1M = 0x01
    case le2M = 0x02
    case leCoded = 0x03

    /// The control protocol's and the config's spelling: `"1m"`, `"2m"`, `"coded"`.
    public var configName: String {
        switch self {
        case .le1M: "1m"
        case .le2M: "2m"
        case .leCoded: "coded"
        }
    }

    public init?(configName: String) {
        guard let phy = Self.allCases.first(where: { $0.configName == configName }) else { return nil }
        self = phy
    }

    public var description: String {
        switch self {
        case .le1M: "LE 1M"
        case .le2M: "LE 2M"
        case .leCoded: "LE Coded"
        }
    }
}
