import GattCore

// The op `advertising_data`: a set's manufacturer and service data replaced while gattd runs.
// Its members are the config's `manufacturer_data` and `service_data`, read by the config's
// code (`AdvertisingDataUpdate.parse`): errors name the path in the request.
extension ControlRequest {
    static func advertisingData(_ o: ControlObjectReader) throws(ControlError) -> ControlCommand {
        let set = try o.optionalString("set")
        guard o.has("manufacturer_data") || o.has("service_data") else {
            throw ControlError(.missingField, "missing \"manufacturer_data\" or \"service_data\" (the fields to replace; [] removes one)")
        }
        switch AdvertisingDataUpdate.parse(manufacturerData: o.raw("manufacturer_data"), serviceData: o.raw("service_data")) {
        case .success(let update): return .advertisingData(set: set, update: update)
        case .failure(let errors): throw ControlError(.invalidValue, errors.lines().joined(separator: "; "))
        }
    }
}

extension AdvertisingDataUpdate {
    /// The request's members for the fields this update replaces, as the config spells them.
    public var jsonMembers: [(String, JSONText)] {
        var m: [(String, JSONText)] = []
        if let manufacturerData {
            m.append(("manufacturer_data", .array(manufacturerData.map { .object([("company_id", .int(Int($0.companyID))), ("data", .hexValue($0.data))]) })))
        }
        if let serviceData {
            m.append(("service_data", .array(serviceData.map { .object([("uuid", .string($0.uuid.description)), ("data", .hexValue($0.data))]) })))
        }
        return m
    }
}
