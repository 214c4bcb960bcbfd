import FuzzSupport
import GattCore
import GattProfiles

/// Fuzzes `ConfigLoader.load(data:)` (the JSON parser, every validation rule and
/// the cross-checks) with the profiles' catalog, as gattd loads configs: `{"profile": ...}`
/// entries are expanded (their options checked) before the services are parsed. The oracle traps when:
/// - a failure has no error, more than `ConfigErrors.reportLimit` of them, a total
///   below what it lists, an empty path or message, or a line longer than
///   `maximumLineLength` (long keys and values must be quoted shortened);
/// - loading the same bytes twice gives different results;
/// - a config that loads does not give a database within the handle space with
///   consecutive handles, or has no advertising payloads;
/// - an advertising set (`advertising_sets` too) has a payload its PDUs cannot carry
///   (over its capacity, or AD structures that do not parse), an extended set that is
///   connectable and scannable, or the limits check disagrees with the payloads.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = FuzzInput(data, size).bytes
    let first = load(bytes)
    let second = load(bytes)
    switch (first, second) {
    case (.success(let a), .success(let b)):
        if a != b { oracleViolation("loading twice gave two configurations") }
        checkLoaded(a.gatt)
    case (.failure(let a), .failure(let b)):
        if a.lines() != b.lines() || a.totalCount != b.totalCount { oracleViolation("loading twice gave two reports") }
        checkReport(a)
    default:
        oracleViolation("loading twice: one success, one failure")
    }
    return 0
}

/// The longest report line accepted: a path through services, characteristics and
/// descriptors with shortened keys, and the longest message with shortened values.
let maximumLineLength = 1024

/// A fixed machine (no file is read while fuzzing).
let catalog = ProfileCatalog(system: SystemFacts(manufacturer: "ACME", model: "Fuzz Board", firmwareRevision: "6.1.0", softwareRevision: "Debian GNU/Linux 12 (bookworm)"))

func load(_ bytes: [UInt8]) -> Result<DaemonConfiguration, ConfigErrors> {
    do {
        return .success(try ConfigLoader.load(data: bytes, expander: catalog))
    } catch {
        return .failure(error)
    }
}

func checkReport(_ report: ConfigErrors) {
    if report.errors.isEmpty { oracleViolation("a failure without errors") }
    if report.errors.count > ConfigErrors.reportLimit { oracleViolation("\(report.errors.count) errors listed") }
    if report.totalCount < report.errors.count { oracleViolation("total \(report.totalCount) below the \(report.errors.count) listed") }
    let lines = report.lines()
    if lines.count != report.errors.count + (report.omittedCount > 0 ? 1 : 0) { oracleViolation("\(lines.count) report lines") }
    for e in report.errors where e.path.isEmpty || e.message.isEmpty {
        oracleViolation("an error without path or message: \(e)")
    }
    for line in lines where line.utf8.count > maximumLineLength {
        oracleViolation("a \(line.utf8.count)-byte report line: \(String(line.prefix(200)))…")
    }
}

func checkLoaded(_ config: GattConfiguration) {
    let db = config.makeDatabase()
    if db.attributes.isEmpty || db.attributes.count > 0xFFFF { oracleViolation("\(db.attributes.count) attributes") }
    for (i, a) in db.attributes.enumerated() where Int(a.handle.rawValue) != i + 1 {
        oracleViolation("attribute \(i) has handle \(a.handle.rawValue)")
    }
    if db.services.count != config.services.count + 2 { oracleViolation("\(db.services.count) services for \(config.services.count) configured") }
    do {
        _ = try config.advertisingPayloads()
        checkSets(try config.allAdvertisingSets())
    } catch {
        oracleViolation("a loaded config without advertising payloads: \(error)")
    }
}

func checkSets(_ sets: [AdvertisingSet]) {
    for set in sets {
        let p = set.payloads
        if p.advertisingData.count > p.advertisingDataCapacity || p.scanResponseData.count > p.scanResponseCapacity {
            oracleViolation("\(set.path): \(p.advertisingData.count) + \(p.scanResponseData.count) bytes over \(p.advertisingDataCapacity) + \(p.scanResponseCapacity)")
        }
        if AdvertisingDataStructure.parse(p.advertisingData) == nil || AdvertisingDataStructure.parse(p.scanResponseData) == nil {
            oracleViolation("\(set.path): a payload's AD structures do not parse")
        }
        if p.pdus.isExtended, p.isConnectable, p.isScannable { oracleViolation("\(set.path): extended, connectable and scannable") }
    }
    let roomy = AdvertisingLimits(numberOfSets: sets.count, maximumDataLength: AdvertisingPayloadBuilder.maximumExtendedDataLength, extendedPDUs: true)
    if !roomy.violations(of: sets).isEmpty { oracleViolation("sets over limits that hold every loaded config") }
    let legacy = AdvertisingLimits.legacy.violations(of: sets)
    if legacy.count != sets.filter(\.payloads.pdus.isExtended).count { oracleViolation("legacy limits: \(legacy)") }
}

/// The entry point (see `runLibFuzzer`).
@main enum FuzzConfigMain {
    static func main() { runLibFuzzer(fuzzConfig) }
}
