extension AdvertisingDataUpdate {
    /// The control op `advertising_data`'s `manufacturer_data` and `service_data` members (nil:
    /// absent), read by the config's own code, so errors name the path in the request
    /// (`manufacturer_data[0].company_id`) as `--check-config` names it in the file.
    public static func parse(manufacturerData: JSONValue?, serviceData: JSONValue?) -> Result<AdvertisingDataUpdate, ConfigErrors> {
        let r = ConfigReader()
        let parser = AdvertisingParser(reader: r)
        var update = AdvertisingDataUpdate()
        if let v = manufacturerData { update.manufacturerData = parser.parseManufacturerData(v, at: "manufacturer_data") }
        if let v = serviceData { update.serviceData = parser.parseServiceData(v, at: "service_data") }
        return r.hasErrors ? .failure(r.errors) : .success(update)
    }
}
