/// The run-time data of every set (what `advertising_data` replaced), over the config's. Kept
/// in memory only: a restart advertises the config. A reload keeps a set's run-time data (as it
/// keeps characteristic values), except a field the new config itself changes for that set (the
/// edit is the newer intent), a set the new config no longer has, and data that no longer fits
/// beside the new config's other fields.
public struct AdvertisingDataOverrides: Sendable, Equatable {
    /// By set id (`AdvertisingSet.primaryID` for the config's `advertising`).
    public private(set) var updates: [String: AdvertisingDataUpdate] = [:]

    public init() {}

    /// `configuration` with every set's run-time data in place.
    public func applied(to configuration: GattConfiguration) -> GattConfiguration {
        var out = configuration
        if let u = updates[AdvertisingSet.primaryID] { out.advertising = u.applied(to: out.advertising) }
        for i in out.advertisingSets.indices {
            if let u = updates[out.advertisingSets[i].id] { out.advertisingSets[i].advertising = u.applied(to: out.advertisingSets[i].advertising) }
        }
        return out
    }

    /// Takes `update` for the set `id` of `configuration` (the config as loaded, without
    /// run-time data) and returns the set built with it: by `AdvertisingPayloadBuilder`'s rules,
    /// then, when known, checked against what the controller takes per set (`limits`).
    /// Throws, changing nothing, when the set is unknown or the data does not fit.
    public mutating func update(
        set id: String, with update: AdvertisingDataUpdate, in configuration: GattConfiguration, limits: AdvertisingLimits? = nil
    ) throws(AdvertisingDataUpdateError) -> AdvertisingSet {
        let merged = update.merged(over: updates[id] ?? AdvertisingDataUpdate())
        let set = try Self.build(id, merged, in: configuration, limits: limits)
        updates[id] = merged
        return set
    }

    /// After a reload from `old` to `new` (both as loaded): what carries over (see the type),
    /// and a line for each set whose run-time data was dropped because it no longer fits.
    public mutating func reload(from old: GattConfiguration, to new: GattConfiguration, limits: AdvertisingLimits? = nil) -> [String] {
        var kept: [String: AdvertisingDataUpdate] = [:]
        var dropped: [String] = []
        for (id, update) in updates.sorted(by: { $0.key < $1.key }) {
            guard let before = Self.advertising(of: id, in: old), let after = Self.advertising(of: id, in: new) else { continue }
            var u = update
            if before.manufacturerData != after.manufacturerData { u.manufacturerData = nil }
            if before.serviceData != after.serviceData { u.serviceData = nil }
            guard !u.isEmpty else { continue }
            do {
                _ = try Self.build(id, u, in: new, limits: limits)
                kept[id] = u
            } catch {
                dropped.append("advertising set \"\(id)\": its run-time data no longer fits the reloaded config, which it now advertises (\(error))")
            }
        }
        updates = kept
        return dropped
    }

    /// The set `id` of `configuration` with `update` applied, built.
    static func build(
        _ id: String, _ update: AdvertisingDataUpdate, in configuration: GattConfiguration, limits: AdvertisingLimits?
    ) throws(AdvertisingDataUpdateError) -> AdvertisingSet {
        let built: AdvertisingSet?
        do {
            built = try buildPayloads(id, update, in: configuration)
        } catch {
            throw .doesNotFit(error)
        }
        guard let set = built else {
            throw .unknownSet(id, sets: [AdvertisingSet.primaryID] + configuration.advertisingSets.map(\.id))
        }
        // Only the data length is the controller's to refuse here: the number of sets and their
        // PDUs are what they were at start.
        if let limits, let violation = limits.violations(of: [set]).first(where: { if case .exceedsControllerLimit = $0 { true } else { false } }) {
            throw .doesNotFit(violation)
        }
        return set
    }

    /// Nil when there is no set `id`.
    private static func buildPayloads(
        _ id: String, _ update: AdvertisingDataUpdate, in configuration: GattConfiguration
    ) throws(AdvertisingPayloadError) -> AdvertisingSet? {
        if id == AdvertisingSet.primaryID {
            let payloads = try AdvertisingPayloadBuilder.build(update.applied(to: configuration.advertising), deviceName: configuration.name)
            return AdvertisingSet(id: id, path: AdvertisingSet.primaryPath, payloads: payloads)
        }
        guard var element = configuration.advertisingSets.first(where: { $0.id == id }) else { return nil }
        element.advertising = update.applied(to: element.advertising)
        return try element.build()
    }

    private static func advertising(of id: String, in configuration: GattConfiguration) -> AdvertisingConfiguration? {
        id == AdvertisingSet.primaryID ? configuration.advertising : configuration.advertisingSets.first { $0.id == id }?.advertising
    }
}
