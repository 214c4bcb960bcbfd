/// New manufacturer or service data for one advertising set while gattd runs (the control op
/// `advertising_data`: a beacon carrying a counter or a reading). A field that is nil stays as
/// it is; an empty array removes that field's AD structures (Core Spec Supplement Part A §1.4,
/// §1.11).
public struct AdvertisingDataUpdate: Sendable, Equatable {
    /// Replaces `manufacturer_data` when not nil.
    public var manufacturerData: [AdvertisingConfiguration.ManufacturerData]?
    /// Replaces `service_data` when not nil.
    public var serviceData: [AdvertisingConfiguration.ServiceData]?

    public init(manufacturerData: [AdvertisingConfiguration.ManufacturerData]? = nil, serviceData: [AdvertisingConfiguration.ServiceData]? = nil) {
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
    }

    /// Replaces neither field.
    public var isEmpty: Bool { manufacturerData == nil && serviceData == nil }

    /// `advertising` with the fields this update replaces.
    public func applied(to advertising: AdvertisingConfiguration) -> AdvertisingConfiguration {
        var out = advertising
        if let manufacturerData { out.manufacturerData = manufacturerData }
        if let serviceData { out.serviceData = serviceData }
        return out
    }

    /// This update after `older`: the fields this one has, else `older`'s.
    public func merged(over older: AdvertisingDataUpdate) -> AdvertisingDataUpdate {
        AdvertisingDataUpdate(manufacturerData: manufacturerData ?? older.manufacturerData, serviceData: serviceData ?? older.serviceData)
    }
}

/// Why an `AdvertisingDataUpdate` was refused; the set is left as it was.
public enum AdvertisingDataUpdateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No set has this id (`sets`: the ids there are, the primary's first).
    case unknownSet(String, sets: [String])
    /// The set's new payloads do not build (too long for its PDUs or for the controller);
    /// the error names the field under the set's config path and the bytes.
    case doesNotFit(AdvertisingPayloadError)

    /// The data is too long for the set (its PDUs, or the controller), rather than invalid.
    public var isTooLong: Bool {
        switch self {
        case .unknownSet, .doesNotFit(.invalidValue): false
        case .doesNotFit: true
        }
    }

    public var description: String {
        switch self {
        case .unknownSet(let id, let sets):
            "no advertising set \"\(id)\"; the sets are \(sets.map { "\"\($0)\"" }.joined(separator: ", "))"
        case .doesNotFit(let error):
            "the new data does not fit, the set is unchanged: \(error)"
        }
    }
}
