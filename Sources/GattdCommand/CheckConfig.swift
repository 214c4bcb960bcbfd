import GattCore
import GattProfiles

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
            config = try ConfigLoader.load(path: path, expander: profileCatalog).gatt
        } catch {
            if error.isReadFailure {
                return (noInput, "", "gattd: \(error.errors[0].message)\n")
            }
            let lines = error.lines(prefix: "\(path): ").map { $0 + "\n" }.joined()
            let count = error.totalCount
            return (dataError, "", lines + "gattd: \(path): \(count) error\(count == 1 ? "" : "s")\n")
        }
        var db = config.makeDatabase()
        // As an H4 transport serves it (the kernel transport only with Enhanced Credit Based mode).
        db.setEnhancedATTSupported(config.enhancedATT)
        var out = summary(path: path, config: config, database: db) + "\n\n" + AttributeTable.render(db)
        let sets: [AdvertisingSet]
        do {
            sets = try config.allAdvertisingSets()
        } catch {
            return (dataError, "", "\(path): \(error)\ngattd: \(path): 1 error\n")
        }
        var profiles: [ProfileInstance] = []
        if case .success(let data) = ConfigLoader.readFile(path), let root = try? JSONParser.parse(data) {
            profiles = profileCatalog.instances(inConfig: root)
        }
        let warnings = (sets.flatMap(\.payloads.facts.warnings).map { "\($0)" } + profiles.flatMap(\.warnings) + profileCatalog.advertisingWarnings(profiles, sets: sets)).map { "\(path): warning: \($0)\n" }.joined()
        // The primary set alone is printed as it always was; with other sets, each gets a heading.
        let payloads = sets.count == 1 ? advertising(sets[0].payloads) : sets.map { heading($0) + advertising($0.payloads) }.joined(separator: "\n")
        let phys = config.advertising.connectionPHYs.map { $0.configName }.joined(separator: ", ")
        let eatt = "\neatt: \(config.enhancedATT ? "on" : "off")\n"
            + "phy: each new connection is asked for \(phys)\(config.advertising.preferredPHYs == nil ? " (the default)" : "") where the controller has \(config.advertising.connectionPHYs == [.le1M] ? "it" : "them")\(config.advertising.requestDataLengthAndPHY ? "" : " (off: connection.data_length_and_phy is false)")\n"
        out += out.hasSuffix("\n") ? "" : "\n"
        return (0, out + profileExpansions(profiles) + "\n" + payloads + l2capChannels(config) + eatt, warnings)
    }

    /// Each profile entry and the service it expands to (as a config would write it out).
    static func profileExpansions(_ profiles: [ProfileInstance]) -> String {
        profiles.map { p in "\n\(p.path): profile \"\(p.options.name)\" expands to:\n  \(JSONText(p.service).text)\n" }.joined()
    }

    /// One line per L2CAP channel: PSM (and whether gattd picked it), security, MTU.
    static func l2capChannels(_ config: GattConfiguration) -> String {
        guard !config.l2capChannels.isEmpty else { return "" }
        return "\n" + config.l2capChannels.map { c in
            let picked = c.requestedPSM == nil ? " (dynamic: picked by gattd, kept in the state directory once it runs)" : ""
            return "L2CAP channel \"\(c.id)\": PSM \(c.psm) (0x\(String(c.psm, radix: 16, uppercase: true)))\(picked), security \(c.security.rawValue), MTU \(c.mtu)\n"
        }.joined()
    }

    /// `advertising set "ID" (PATH): ` the PDUs (marking those that need extended advertising) and the type.
    static func heading(_ set: AdvertisingSet) -> String {
        let p = set.payloads
        let what: String
        switch p.pdus {
        case .legacy:
            what = "legacy PDUs, \(p.parameters.advertisingType)"
        case .extended(let primary, let secondary):
            let kind = p.isConnectable ? "connectable" : p.isScannable ? "scannable" : "non-connectable and non-scannable"
            what = "extended PDUs (needs LE Extended Advertising), primary PHY \(primary), secondary PHY \(secondary), \(kind)"
        }
        return "advertising set \"\(set.id)\" (\(set.path)): \(what)\n"
    }

    /// The advertising data and scan response exactly as sent, decoded (byte counts of what
    /// the PDUs hold), and what the log line will say.
    static func advertising(_ p: AdvertisingPayloads) -> String {
        var lines =
            p.advertisingDataCapacity == 0
            ? ["advertising data: none (a scannable extended set sends its data in the scan response)"]
            : AdvertisingDataStructure.describe(payload: p.advertisingData, title: "advertising data", limit: p.advertisingDataCapacity)
        lines += p.isScannable || !p.scanResponseData.isEmpty
            ? AdvertisingDataStructure.describe(payload: p.scanResponseData, title: "scan response", limit: p.scanResponseCapacity)
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
