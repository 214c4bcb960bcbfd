import GattCore

/// One service in the `list_services` and `add_service` replies:
/// `{"id":"heart","uuid":"180D","start":23,"end":28,"runtime":true}` (`id` left out when
/// the service has none; `runtime`: added with `add_service`, not from the config).
public struct ControlService: Sendable, Equatable {
    public var id: String?
    public var uuid: String
    public var start: Int
    public var end: Int
    public var runtime: Bool
    /// A runtime service put back from the state directory at start (state restoration),
    /// not added by a program since.
    public var restored: Bool
    /// The profile the service was expanded from (`{"profile": "battery"}`); nil for one written out.
    public var profile: String?
    public init(id: String?, uuid: String, start: Int, end: Int, runtime: Bool, restored: Bool = false, profile: String? = nil) {
        self.id = id
        self.uuid = uuid
        self.start = start
        self.end = end
        self.runtime = runtime
        self.restored = restored
        self.profile = profile
    }

    var json: JSONText {
        var m: [(String, JSONText)] = []
        if let id { m.append(("id", .string(id))) }
        m += [("uuid", .string(uuid)), ("start", .int(start)), ("end", .int(end)), ("runtime", .bool(runtime))]
        if restored { m.append(("restored", .bool(true))) }
        if let profile { m.append(("profile", .string(profile))) }
        return .object(m)
    }

    init(_ o: ControlObjectReader) throws(ControlError) {
        id = try o.optionalString("id")
        uuid = try o.string("uuid")
        start = try o.count("start")
        end = try o.count("end")
        runtime = try o.bool("runtime")
        restored = o.has("restored") ? try o.bool("restored") : false
        profile = try o.optionalString("profile")
    }
}
