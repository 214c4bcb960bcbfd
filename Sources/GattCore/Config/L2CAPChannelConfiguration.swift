/// A channel of `l2cap_channels` as the config declares it: `psm` nil means gattd picks a
/// dynamic one (`GattConfiguration.assignL2CAPPSMs`).
public struct L2CAPChannelConfiguration: Sendable, Equatable {
    public var id: String
    /// The PSM the config asks for (nil: dynamic, picked by gattd).
    public var requestedPSM: UInt16?
    public var security: L2CAPChannelSecurity
    public var mtu: Int
    /// The PSM in use: `requestedPSM`, or the dynamic one gattd picked.
    public var psm: UInt16

    public init(id: String, requestedPSM: UInt16? = nil, security: L2CAPChannelSecurity = .none, mtu: Int = L2CAPChannelServer.defaultMTU) {
        self.id = id
        self.requestedPSM = requestedPSM
        self.security = security
        self.mtu = mtu
        self.psm = requestedPSM ?? 0
    }

    public var server: L2CAPChannelServer { L2CAPChannelServer(id: id, psm: psm, security: security, mtu: mtu) }

    /// One channel object (the control op `publish_l2cap_channel`), checked as the config's
    /// `l2cap_channels` entries are, with paths relative to `path`. `psm` is `requestedPSM`
    /// (0 when gattd is to pick one).
    public static func parse(_ v: JSONValue, path: String = "channel") -> Result<L2CAPChannelConfiguration, ConfigErrors> {
        let r = ConfigReader()
        let parsed = L2CAPChannelParser(reader: r).parse(v, at: path)
        guard !r.hasErrors, let (c, _) = parsed else { return .failure(r.errors) }
        return .success(c)
    }
}
