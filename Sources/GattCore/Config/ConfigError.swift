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

/// Every problem found in a config file, in document order.
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [ConfigError]
    public init(_ errors: [ConfigError]) { self.errors = errors }

    /// True when the file could not be read at all (missing, unreadable,
    /// a directory): `gattd --check-config` exits with EX_NOINPUT then.
    public var isReadFailure: Bool { errors.count == 1 && errors[0].path == ConfigError.filePath }

    /// One error per line.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// The validated configuration: what `GATTDatabase` and the advertiser need.
public struct GattConfiguration: Sendable, Equatable {
    /// GAP Device Name (also the default advertised local name).
    public var name: String
    /// GAP Appearance.
    public var appearance: UInt16
    public var advertising: AdvertisingConfiguration
    /// User services; `includes` are indices into this array.
    public var services: [ServiceDefinition]

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
    /// The advertising and scan-response payloads this configuration advertises.
    public func advertisingPayloads() throws(AdvertisingPayloadError) -> AdvertisingPayloads {
        try AdvertisingPayloadBuilder.build(advertising, deviceName: name)
    }
}
