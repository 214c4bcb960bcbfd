/// The `advertising` and `connection` sections of the config (or one element of
/// `advertising_sets`), as plain values.
/// The config loader fills it in; `AdvertisingPayloadBuilder` turns it into the
/// advertising and scan-response payloads.
public struct AdvertisingConfiguration: Sendable, Equatable {
    /// Local name to advertise (defaults to the config's top-level `name`).
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID] = []
    public var manufacturerData: [ManufacturerData] = []
    public var serviceData: [ServiceData] = []
    /// TX Power Level AD structure (dBm), when set.
    public var txPower: Int8?
    /// Appearance AD structure, when set.
    public var appearance: UInt16?
    public var iBeacon: IBeacon?
    /// Advertising interval in milliseconds [min, max] (20 ms ... 10.24 s).
    public var intervalMs = IntervalRange(min: 100, max: 150)
    public var connectable = true
    public var scannable = true
    public var ownAddressType: OwnAddressType = .public
    /// How long each resolvable private address is used (`rpa_timeout_s`, default 15 min).
    public var rpaTimeout: Duration = .seconds(900)
    /// nil: as many as the controller allows.
    public var maxConnections: Int?
    /// `connection.preferred`: parameters to request from each central.
    public var preferredConnection: PreferredConnectionParameters?
    /// `connection.data_length_and_phy`: ask each new connection for the maximum data length
    /// and the 2M PHY (H4 transports, when the controller supports them).
    public var requestDataLengthAndPHY = true
    /// `phy.preferred`: the PHYs each new connection is asked for (LE Set PHY, both ways), in
    /// the config's order; nil: LE 2M (H4 transports, when the controller supports them).
    public var preferredPHYs: [LEPHY]?
    /// What each new connection is asked for: `preferredPHYs`, else LE 2M.
    public var connectionPHYs: [LEPHY] { preferredPHYs ?? [.le2M] }
    /// Legacy or extended advertising PDUs (an `advertising_sets` element's `extended`,
    /// `primary_phy` and `secondary_phy`; the primary set is always legacy).
    public var pdus: AdvertisingPDUs = .legacy

    public init() {}

    /// A [min, max] pair in milliseconds.
    public struct IntervalRange: Sendable, Equatable {
        public var min: Double
        public var max: Double
        public init(min: Double, max: Double) { self.min = min; self.max = max }
    }

    public struct ManufacturerData: Sendable, Equatable {
        public var companyID: UInt16
        public var data: [UInt8]
        public init(companyID: UInt16, data: [UInt8]) { self.companyID = companyID; self.data = data }
    }

    public struct ServiceData: Sendable, Equatable {
        public var uuid: BluetoothUUID
        public var data: [UInt8]
        public init(uuid: BluetoothUUID, data: [UInt8]) { self.uuid = uuid; self.data = data }
    }

    /// Apple iBeacon: manufacturer data for company 0x004C, type 0x02, length 0x15.
    public struct IBeacon: Sendable, Equatable {
        public var uuid: BluetoothUUID
        public var major: UInt16
        public var minor: UInt16
        public var measuredPower: Int8
        public init(uuid: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8) {
            self.uuid = uuid; self.major = major; self.minor = minor; self.measuredPower = measuredPower
        }
    }

    public enum OwnAddressType: String, Sendable, Equatable {
        case `public`
        /// A random static address (Vol 6 Part B §1.3.2.1).
        case random
        /// Resolvable private addresses made with our IRK and renewed every `rpaTimeout`
        /// (§1.3.2.2); the identity distributed to bonded centrals is the static one.
        case rpa

        /// Whether the controller advertises with its random address (static or private).
        public var usesRandomAddress: Bool { self != .public }
    }
}

/// Connection parameters a peripheral asks for (L2CAP Connection Parameter
/// Update Request, Core Spec Vol 3 Part A §4.20).
public struct PreferredConnectionParameters: Sendable, Equatable {
    /// Connection interval in milliseconds [min, max] (multiples of 1.25 ms).
    public var intervalMinMs: Double
    public var intervalMaxMs: Double
    /// Peripheral latency in connection events.
    public var latency: UInt16
    /// Supervision timeout in milliseconds (multiple of 10 ms).
    public var timeoutMs: Int
    public init(intervalMinMs: Double, intervalMaxMs: Double, latency: UInt16, timeoutMs: Int) {
        self.intervalMinMs = intervalMinMs; self.intervalMaxMs = intervalMaxMs; self.latency = latency; self.timeoutMs = timeoutMs
    }
}
