import ArgumentParser
import GattControlProtocol
import GattCore

struct Advertise: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn advertising on or off, or replace its manufacturer or service data (the primary set, or one of the config's advertising_sets).",
        discussion: """
            `gattctl advertise data --manufacturer-data 0xFFFF:0102 --service-data FEAA:10f6` replaces \
            the set's manufacturer_data and service_data (both options repeat); a field not given \
            stays as it is; --no-manufacturer-data and --no-service-data remove one. The data is \
            not written to the config: a restart advertises the config's.
            """)

    enum State: String, ExpressibleByArgument, CaseIterable {
        case on, off, data
    }

    @OptionGroup var global: GlobalOptions
    @Argument(help: "on, off, or data (replace the set's manufacturer or service data).") var state: State
    @Option(help: "The advertising set's id (default: the primary set, the config's advertising).") var set: String?
    @Option(name: .customLong("manufacturer-data"), help: ArgumentHelp("With data: a manufacturer_data element, COMPANY (decimal or 0x hex) and hex data.", valueName: "company:hex"))
    var manufacturerData: [String] = []
    @Option(name: .customLong("service-data"), help: ArgumentHelp("With data: a service_data element, a service UUID and hex data.", valueName: "uuid:hex"))
    var serviceData: [String] = []
    @Flag(name: .customLong("no-manufacturer-data"), help: "With data: remove the set's manufacturer data.") var noManufacturerData = false
    @Flag(name: .customLong("no-service-data"), help: "With data: remove the set's service data.") var noServiceData = false

    func run() throws {
        try runReportingFailures { () throws(GattctlFailure) in
            guard state == .data else {
                if !manufacturerData.isEmpty || !serviceData.isEmpty || noManufacturerData || noServiceData {
                    throw .usage("--manufacturer-data, --service-data, --no-manufacturer-data and --no-service-data go with `gattctl advertise data`")
                }
                try global.connect().expectOK(.advertise(enable: state == .on, set: set))
                return
            }
            // Checked before connecting: a bad option is a usage error whether gattd runs or not.
            let update = try update()
            try global.connect().expectOK(.advertisingData(set: set, update: update))
        }
    }

    /// The options as an update, checked here for a clear message before anything is sent.
    func update() throws(GattctlFailure) -> AdvertisingDataUpdate {
        if noManufacturerData, !manufacturerData.isEmpty { throw .usage("--no-manufacturer-data and --manufacturer-data exclude each other") }
        if noServiceData, !serviceData.isEmpty { throw .usage("--no-service-data and --service-data exclude each other") }
        var update = AdvertisingDataUpdate()
        if noManufacturerData { update.manufacturerData = [] }
        if noServiceData { update.serviceData = [] }
        for text in manufacturerData {
            let (key, data) = try Self.split(text, "--manufacturer-data", "company:hex")
            let company = key.lowercased().hasPrefix("0x") ? UInt16(key.dropFirst(2), radix: 16) : UInt16(key)
            guard let company else { throw .usage("--manufacturer-data \"\(text)\": \"\(key)\" is not a company id (0...65535, or 0x0000...0xFFFF)") }
            update.manufacturerData = (update.manufacturerData ?? []) + [.init(companyID: company, data: data)]
        }
        for text in serviceData {
            let (key, data) = try Self.split(text, "--service-data", "uuid:hex")
            guard let uuid = BluetoothUUID(key) else { throw .usage("--service-data \"\(text)\": \"\(key)\" is not a UUID (\"FEAA\", or 128-bit)") }
            update.serviceData = (update.serviceData ?? []) + [.init(uuid: uuid, data: data)]
        }
        guard !update.isEmpty else {
            throw .usage("`gattctl advertise data` needs --manufacturer-data, --service-data, --no-manufacturer-data or --no-service-data")
        }
        return update
    }

    /// `KEY:HEX` at the first ':' (hex may hold more).
    private static func split(_ text: String, _ option: String, _ form: String) throws(GattctlFailure) -> (String, [UInt8]) {
        guard let colon = text.firstIndex(of: ":") else { throw .usage("\(option) \"\(text)\": expected \(form)") }
        let data = try ValueEncoding.hex.value(String(text[text.index(after: colon)...]))
        return (String(text[..<colon]), data.bytes)
    }
}
