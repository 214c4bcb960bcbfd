import GattCore

/// One app L2CAP channel in the `l2cap_listen`, `publish_l2cap_channel` and
/// `list_l2cap_channels` replies: `{"id":"stream","psm":129,"security":"none","mtu":2048}`
/// (`list_l2cap_channels` adds `"listeners":N` and `"runtime":true` for published ones).
public struct ControlL2CAPChannel: Sendable, Equatable {
    public var id: String
    public var psm: UInt16
    public var security: L2CAPChannelSecurity
    public var mtu: Int
    /// Programs listening for it (`list_l2cap_channels` only).
    public var listeners: Int?
    /// Published with `publish_l2cap_channel`, not from the config.
    public var runtime: Bool

    public init(id: String, psm: UInt16, security: L2CAPChannelSecurity, mtu: Int, listeners: Int? = nil, runtime: Bool = false) {
        self.id = id
        self.psm = psm
        self.security = security
        self.mtu = mtu
        self.listeners = listeners
        self.runtime = runtime
    }

    var json: JSONText {
        var m: [(String, JSONText)] = [("id", .string(id)), ("psm", .int(Int(psm))), ("security", .string(security.rawValue)), ("mtu", .int(mtu))]
        if let listeners { m.append(("listeners", .int(listeners))) }
        if runtime { m.append(("runtime", .bool(true))) }
        return .object(m)
    }

    init(_ o: ControlObjectReader) throws(ControlError) {
        id = try o.string("id")
        let psm = try o.count("psm")
        guard psm <= 0xFFFF else { throw ControlError(.invalidValue, "\(o.path("psm")) must be at most 65535") }
        self.psm = UInt16(psm)
        let s = try o.oneOf("security", L2CAPChannelSecurity.allCases.map(\.rawValue))
        security = L2CAPChannelSecurity(rawValue: s) ?? .none
        mtu = try o.count("mtu")
        listeners = o.has("listeners") ? try o.count("listeners") : nil
        runtime = o.has("runtime") ? try o.bool("runtime") : false
    }
}
