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
        var sets = [AdvertisingSet.primary(try advertisingPayloads())]
        for set in advertisingSets { sets.append(try set.build()) }
        return sets
    }
}
