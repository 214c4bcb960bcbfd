/// One problem in a config file: where (a JSON path such as
/// `services[0].characteristics[1].uuid`) and what is wrong.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// The path used when the file itself cannot be read.
    public static let filePath = "(file)"
    /// The path used for the document as a whole (e.g. it is not an object).
    public static let rootPath = "(top level)"

    /// "path: message"
    public var description: String { "\(path): \(message)" }
}

/// The problems found in a config file, in document order: at most the
/// first `reportLimit`, and how many there were in all. Output stays small
/// however broken the file is (it goes to the journal on every reload).
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    /// How many errors are kept and reported; the rest are only counted.
    public static let reportLimit = 100

    /// The first errors (at most `reportLimit`).
    public var errors: [ConfigError]
    /// How many errors the file has in all (at least `errors.count`).
    public var totalCount: Int

    /// Keeps the first `reportLimit` of `errors`; `totalCount` defaults to `errors.count`.
    public init(_ errors: [ConfigError], totalCount: Int? = nil) {
        self.errors = Array(errors.prefix(Self.reportLimit))
        self.totalCount = max(totalCount ?? errors.count, self.errors.count)
    }

    /// True when the file could not be read at all (missing, unreadable,
    /// a directory): `gattd --check-config` exits with EX_NOINPUT then.
    public var isReadFailure: Bool { errors.count == 1 && errors[0].path == ConfigError.filePath }

    /// How many errors are counted but not in `errors`.
    public var omittedCount: Int { totalCount - errors.count }

    /// The report: one line per error ("path: message", after `prefix` when given),
    /// then "… and N more errors" when some were left out.
    public func lines(prefix: String = "") -> [String] {
        var out = errors.map { prefix + $0.description }
        let n = omittedCount
        if n > 0 { out.append("… and \(n) more error\(n == 1 ? "" : "s")") }
        return out
    }

    /// The report, one line per error.
    public var description: String { lines().joined(separator: "\n") }
}

/// The validated configuration: what `GATTDatabase` and the advertiser need.
public struct GattConfiguration: Sendable, Equatable {
    /// GAP Device Name (also the default advertised local name).
    public var name: String
    /// GAP Appearance.
    public var appearance: UInt16
    /// The primary advertising set (`advertising`, id `AdvertisingSet.primaryID`).
    public var advertising: AdvertisingConfiguration
    /// `advertising_sets`: the other advertising sets, in config order.
    public var advertisingSets: [AdvertisingSetConfiguration] = []
    /// User services; `includes` are indices into this array.
    public var services: [ServiceDefinition]
    /// The `security` object: what the Security Manager offers and accepts.
    public var security = SecurityManagerConfiguration()
    /// `l2cap_channels`: the L2CAP channels programs serve (PSMs assigned: `assignL2CAPPSMs`).
    public var l2capChannels: [L2CAPChannelConfiguration] = []
    /// `eatt`: accept Enhanced ATT bearers where the transport can (Server Supported
    /// Features bit 0 set, PSM 0x0027 accepted on encrypted links); false refuses them.
    public var enhancedATT = true

    public init(name: String, appearance: UInt16 = 0, advertising: AdvertisingConfiguration = AdvertisingConfiguration(), services: [ServiceDefinition] = []) {
        self.name = name
        self.appearance = appearance
        self.advertising = advertising
        self.services = services
    }

    /// The attribute table: built-in GAP and GATT services, then `services`.
    public func makeDatabase() -> GATTDatabase {
        GATTDatabase(deviceName: name, appearance: appearance, services: services)
    }
}

extension GattConfiguration {
    /// The advertising and scan-response payloads of the primary set.
    public func advertisingPayloads() throws(AdvertisingPayloadError) -> AdvertisingPayloads {
        try AdvertisingPayloadBuilder.build(advertising, deviceName: name)
    }

    /// Every advertising set, built: the primary one (`advertising`) first, then
    /// `advertising_sets` in config order. Check them against the controller with
    /// `AdvertisingLimits.violations(of:)`.
    public func allAdvertisingSets() throws(AdvertisingPayloadError) -> [AdvertisingSet] {
        var sets = [AdvertisingSet(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, payloads: try advertisingPayloads())]
        for set in advertisingSets { sets.append(try set.build()) }
        return sets
    }
}
