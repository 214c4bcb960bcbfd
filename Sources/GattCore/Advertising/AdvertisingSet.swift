/// Which advertising PDUs carry a set (Vol 6 Part B §2.3.1): legacy (ADV_IND,
/// ADV_SCAN_IND, ADV_NONCONN_IND; every scanner sees them, 31 bytes per payload) or
/// extended (ADV_EXT_IND on the primary PHY pointing to AUX_ADV_IND on the secondary
/// PHY; only Bluetooth 5 scanners see them, up to 1650 bytes).
public enum AdvertisingPDUs: Sendable, Hashable, CustomStringConvertible {
    case legacy
    case extended(primaryPHY: LEPHY, secondaryPHY: LEPHY)

    /// Extended PDUs on LE 1M for both.
    public static let extended1M = AdvertisingPDUs.extended(primaryPHY: .le1M, secondaryPHY: .le1M)

    public var isExtended: Bool { self != .legacy }

    public var description: String {
        switch self {
        case .legacy: "legacy PDUs"
        case .extended(let primary, let secondary): "extended PDUs (primary PHY \(primary), secondary PHY \(secondary))"
        }
    }
}

/// One element of the config's `advertising_sets`: an advertising set besides the
/// primary one (`advertising`).
public struct AdvertisingSetConfiguration: Sendable, Equatable {
    /// The set's `id` (unique, never `AdvertisingSet.primaryID`).
    public var id: String
    /// The JSON path of the element (`advertising_sets[0]`); the builder names fields under it.
    public var path: String
    /// The set's keys; `pdus` comes from `extended`, `primary_phy` and `secondary_phy`.
    /// No local name unless the set has `local_name` (the device name is the primary's default only).
    public var advertising: AdvertisingConfiguration

    public init(id: String, path: String, advertising: AdvertisingConfiguration) {
        self.id = id
        self.path = path
        self.advertising = advertising
    }

    /// The set's payloads (`AdvertisingPayloadBuilder`); fields at fault are named under `path`.
    public func build() throws(AdvertisingPayloadError) -> AdvertisingSet {
        AdvertisingSet(id: id, path: path, payloads: try AdvertisingPayloadBuilder.build(advertising, deviceName: "", path: path))
    }
}

/// One advertising set (Vol 4 Part E §7.8.53: what an Advertising_Handle names), built:
/// its id, the config path it comes from, and its payloads and PDU kind.
public struct AdvertisingSet: Sendable, Hashable {
    /// The id of the set the config's `advertising` describes.
    public static let primaryID = "primary"
    /// The config path of the primary set.
    public static let primaryPath = "advertising"

    /// `primaryID` or the `id` of an `advertising_sets` element.
    public var id: String
    /// `advertising` or `advertising_sets[N]`: where errors about this set point.
    public var path: String
    public var payloads: AdvertisingPayloads

    public init(id: String, path: String, payloads: AdvertisingPayloads) {
        self.id = id
        self.path = path
        self.payloads = payloads
    }

    public var isPrimary: Bool { id == Self.primaryID }

    /// The primary set (the config's `advertising`) with `payloads`.
    public static func primary(_ payloads: AdvertisingPayloads) -> AdvertisingSet {
        AdvertisingSet(id: primaryID, path: primaryPath, payloads: payloads)
    }
}
