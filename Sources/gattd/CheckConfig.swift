import GattCore

/// `gattd --check-config FILE`: validates a config and prints a summary and
/// the attribute table. Exit codes follow sysexits.h.
enum CheckConfig {
    /// EX_DATAERR: the config is invalid.
    static let dataError: Int32 = 65
    /// EX_NOINPUT: the file cannot be read.
    static let noInput: Int32 = 66

    /// Returns the exit code and what to print on stdout and stderr.
    static func run(path: String) -> (code: Int32, stdout: String, stderr: String) {
        let config: GattConfiguration
        do {
            config = try ConfigLoader.load(path: path)
        } catch {
            if error.isReadFailure {
                return (noInput, "", "gattd: \(error.errors[0].message)\n")
            }
            let lines = error.lines(prefix: "\(path): ").map { $0 + "\n" }.joined()
            let count = error.totalCount
            return (dataError, "", lines + "gattd: \(path): \(count) error\(count == 1 ? "" : "s")\n")
        }
        let db = config.makeDatabase()
        let out = summary(path: path, config: config, database: db) + "\n\n" + AttributeTable.render(db)
        let payloads: AdvertisingPayloads
        do {
            payloads = try AdvertisingPayloadBuilder.build(config.advertising, deviceName: config.name)
        } catch {
            return (dataError, "", "\(path): \(error)\ngattd: \(path): 1 error\n")
        }
        let warnings = payloads.facts.warnings.map { "\(path): warning: \($0)\n" }.joined()
        return (0, out + (out.hasSuffix("\n") ? "" : "\n") + "\n" + advertising(payloads), warnings)
    }

    /// The advertising data and scan response exactly as sent, decoded, and what the log
    /// line will say.
    static func advertising(_ p: AdvertisingPayloads) -> String {
        var lines = AdvertisingDataStructure.describe(payload: p.advertisingData, title: "advertising data")
        lines += p.parameters.advertisingType.isScannable || !p.scanResponseData.isEmpty
            ? AdvertisingDataStructure.describe(payload: p.scanResponseData, title: "scan response")
            : ["scan response: none (the advertisement is not scannable)"]
        lines.append("log: " + p.facts.logDescription(beaconOnly: p.isBeaconOnly))
        return lines.map { $0 + "\n" }.joined()
    }

    /// One line: name, counts, Database Hash (as a client reads it).
    static func summary(path: String, config: GattConfiguration, database db: GATTDatabase) -> String {
        let services = config.services.count
        let characteristics = config.services.reduce(0) { $0 + $1.characteristics.count }
        let hash = db.attribute(at: db.databaseHashHandle).map { AttributeValueLiteral.hexString($0.value) } ?? "?"
        return "\(path): OK: \"\(config.name)\": \(services) service\(services == 1 ? "" : "s"), "
            + "\(characteristics) characteristic\(characteristics == 1 ? "" : "s") (plus built-in GAP and GATT), "
            + "\(db.attributes.count) attributes, Database Hash \(hash)"
    }
}
