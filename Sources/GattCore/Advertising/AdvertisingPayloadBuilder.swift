/// Builds advertising and scan response payloads (Core Spec Supplement Part A; Vol 3
/// Part C §11) from an `AdvertisingConfiguration`, for legacy or extended PDUs.
///
/// Placement, by priority; each item goes into the advertising data if it fits,
/// otherwise into the scan response (only when scannable), otherwise the build
/// fails with `AdvertisingPayloadError.doesNotFit`:
/// 1. Flags `02 01 06` (LE General Discoverable, BR/EDR Not Supported), always first.
/// 2. iBeacon (manufacturer data `4C 00 02 15`, UUID, major, minor, measured power),
///    always in the advertising data, right after the flags (Apple's layout: 30 bytes).
/// 3. Local name (`localName`, else `deviceName`): Complete Local Name in the
///    advertising data when it fits; otherwise a Shortened Local Name cut at a UTF-8
///    character boundary in the advertising data — as long as possible while
///    everything below still fits — plus the Complete Local Name in the scan
///    response; failing that, the complete name in the scan response only, a
///    shortened name in the advertising data only, or a shortened name in the
///    scan response.
/// 4. Service UUIDs, grouped by size (16-bit, 32-bit, 128-bit lists). As many of a
///    group as fit go into the advertising data, the rest into the scan response. A
///    packet's list is "Complete" when it holds every UUID of that size, else
///    "Incomplete".
/// 5. Manufacturer data, in config order. 6. Service data, in config order.
/// 7. TX Power Level. 8. Appearance.
///
/// "iBeacon alone": the config has an iBeacon and no service UUIDs, manufacturer
/// data, service data, TX power or appearance (the local name does not count). Such
/// a beacon is advertised as Apple specifies it — ADV_NONCONN_IND with exactly
/// flags + iBeacon, no name and no scan response — whatever `connectable` and
/// `scannable` say. Add any other item to get a connectable iBeacon (ADV_IND).
///
/// Advertising type otherwise: connectable → ADV_IND (scan response used only if
/// `scannable`); not connectable but scannable → ADV_SCAN_IND; neither →
/// ADV_NONCONN_IND. Channel map 0x07, filter policy 0x00.
///
/// Extended PDUs (`pdus` is `.extended`, Vol 6 Part B §2.3.1.4–§2.3.1.10, §2.3.4): the
/// same priorities, with these capacities and rules instead of 31 + 31 bytes:
/// - a set cannot be both connectable and scannable (Vol 4 Part E §7.8.53):
///   `.invalidValue` on `PATH.scannable` (the config loader makes `scannable` default
///   to false for extended sets, so only an explicit `true` gets there);
/// - non-connectable, non-scannable: everything in the advertising data, up to 1650
///   bytes (§2.3.4.9; AUX_CHAIN_IND carries what one AUX_ADV_IND cannot); no scan response;
/// - connectable: everything in the advertising data, which must fit one AUX_ADV_IND
///   (no AuxPtr to an AUX_CHAIN_IND in a connectable event): 245 bytes; no scan response;
/// - scannable (not connectable): the advertising data is empty (§7.8.54) and
///   everything goes in the scan response, up to 1650 bytes, without the flags (which
///   never go in a scan response, Supplement Part A §1.3, and a non-connectable
///   advertisement may leave out); an empty scan response is an error (a scannable
///   extended set cannot be enabled without one, §7.8.56). The facts then describe
///   the scan response as they would the advertising data;
/// - one AD structure holds at most 254 bytes of type and data (its length is one
///   byte): a longer item is `.invalidValue`; a service UUID list holds at most 127
///   16-bit, 63 32-bit or 15 128-bit UUIDs, one list per size per payload.
/// What the controller really takes (sets, bytes per set) is checked at start:
/// `AdvertisingLimits`.
public enum AdvertisingPayloadBuilder {
    /// Legacy advertising and scan response payload capacity.
    public static let maximumDataLength = 31
    /// Extended advertising and scan response data capacity: the Host Advertising Data
    /// of one set (Vol 6 Part B §2.3.4.9; Vol 4 Part E §7.8.57 allows 31...1650).
    public static let maximumExtendedDataLength = 1650
    /// A connectable extended set's advertising data, which must fit one AUX_ADV_IND: a
    /// 255-byte payload less the extended header length and AdvMode (1), the extended
    /// header flags (1), AdvA (6) and ADI (2) (Vol 6 Part B §2.3.4).
    public static let maximumConnectableExtendedDataLength = 245
    /// The most bytes of type and data an AD structure holds (its length is one byte).
    public static let maximumStructureLength = 255

    /// Why an extended set that is connectable and scannable is refused.
    static let connectableAndScannable =
        "an extended advertising set cannot be both connectable and scannable (Core Spec Vol 4 Part E §7.8.53); "
        + "leave \"scannable\" out (the data then goes in the advertising data) or set \"connectable\": false (then it all goes in the scan response)"

    /// The most bytes the advertising data and the scan response may hold for `pdus` and `type`.
    public static func capacity(pdus: AdvertisingPDUs, type: AdvertisingType) -> (advertising: Int, scanResponse: Int) {
        guard pdus.isExtended else { return (maximumDataLength, type.isScannable ? maximumDataLength : 0) }
        switch type {
        case .scannableUndirected: return (0, maximumExtendedDataLength)
        case .nonConnectableUndirected: return (maximumExtendedDataLength, 0)
        default: return (maximumConnectableExtendedDataLength, 0)
        }
    }

    /// The flags AD structure: LE General Discoverable Mode | BR/EDR Not Supported.
    public static let flagsStructure: [UInt8] = [0x02, 0x01, 0x06]

    /// The payloads for `config`; `deviceName` is the local name when `config` has none
    /// (pass "" for no name); errors name fields under `path` (`advertising`, `advertising_sets[N]`).
    public static func build(
        _ config: AdvertisingConfiguration, deviceName: String, path: String = AdvertisingSet.primaryPath
    ) throws(AdvertisingPayloadError) -> AdvertisingPayloads {
        let beaconOnly = isBeaconOnly(config)
        let extended = config.pdus.isExtended
        if extended, !beaconOnly, config.connectable, config.scannable {
            throw .invalidValue(field: "\(path).scannable", reason: connectableAndScannable)
        }
        let type: AdvertisingType
        if beaconOnly {
            type = .nonConnectableUndirected
        } else if config.connectable {
            type = .connectableUndirected
        } else {
            type = config.scannable ? .scannableUndirected : .nonConnectableUndirected
        }
        let useScanResponse = !beaconOnly && config.scannable && type.isScannable

        guard let intervalMin = AdvertisingParameters.intervalUnits(milliseconds: config.intervalMs.min),
            let intervalMax = AdvertisingParameters.intervalUnits(milliseconds: config.intervalMs.max)
        else {
            throw .invalidValue(field: "\(path).interval_ms", reason: "must be within 20 ms ... 10240 ms")
        }
        guard intervalMin <= intervalMax else {
            throw .invalidValue(field: "\(path).interval_ms", reason: "minimum is greater than maximum")
        }
        let parameters = AdvertisingParameters(
            intervalMin: intervalMin, intervalMax: intervalMax, advertisingType: type,
            ownAddressType: config.ownAddressType.usesRandomAddress ? .random : .public)

        let name = beaconOnly ? "" : (config.localName ?? deviceName)
        let capacity = capacity(pdus: config.pdus, type: type)
        var advertisingData: [UInt8]
        var scanResponseData: [UInt8]
        var facts: AdvertisingFacts
        if extended, capacity.advertising == 0 {
            // Scannable extended: laid out as one payload without flags, sent as the scan response.
            let budget = AdvertisingBudget(path: path, advertising: capacity.scanResponse, scanResponse: nil, flags: false, extended: true)
            let layout: AdvertisingLayout
            do {
                layout = try AdvertisingLayout.best(config: config, name: name, budget: budget, beaconOnly: beaconOnly)
            } catch {
                guard case .doesNotFit(let field, let needed, let left, _) = error else { throw error }
                throw .doesNotFit(field: field, needed: needed, advertisingDataLeft: 0, scanResponseLeft: left)
            }
            (advertisingData, scanResponseData, facts) = ([], layout.advertising, layout.facts)
            if scanResponseData.isEmpty {
                throw .invalidValue(
                    field: "\(path).scannable",
                    reason: "a scannable extended set sends all its data in the scan response, and this one has none; "
                        + "add \"local_name\" or other data, or leave \"scannable\" out")
            }
        } else {
            let budget = AdvertisingBudget(
                path: path, advertising: capacity.advertising, scanResponse: useScanResponse ? capacity.scanResponse : nil, flags: true,
                extended: extended)
            let layout = try AdvertisingLayout.best(config: config, name: name, budget: budget, beaconOnly: beaconOnly)
            (advertisingData, scanResponseData, facts) = (layout.advertising, layout.scanResponse, layout.facts)
        }
        // The loader copies `name` into `localName` when the config has no `local_name`.
        facts.nameField = config.localName == nil || config.localName == deviceName ? "name" : "\(path).local_name"
        facts.path = path
        return AdvertisingPayloads(
            advertisingData: advertisingData, scanResponseData: scanResponseData, parameters: parameters, isBeaconOnly: beaconOnly,
            facts: facts, pdus: config.pdus)
    }

    /// True when `config` is an iBeacon alone (see the type documentation).
    public static func isBeaconOnly(_ config: AdvertisingConfiguration) -> Bool {
        config.iBeacon != nil && config.serviceUUIDs.isEmpty && config.manufacturerData.isEmpty
            && config.serviceData.isEmpty && config.txPower == nil && config.appearance == nil
    }

    /// The 27-byte iBeacon AD structure: `1A FF 4C 00 02 15`, proximity UUID
    /// (big-endian), major (BE), minor (BE), measured power.
    public static func iBeaconStructure(_ beacon: AdvertisingConfiguration.IBeacon) -> [UInt8] {
        var data: [UInt8] = [0x4C, 0x00, 0x02, 0x15]
        data += beacon.uuid.bytes
        data += [UInt8(beacon.major >> 8), UInt8(beacon.major & 0xFF), UInt8(beacon.minor >> 8), UInt8(beacon.minor & 0xFF)]
        data.append(UInt8(bitPattern: beacon.measuredPower))
        return AdvertisingDataStructure(type: .manufacturerSpecificData, data: data).encoded
    }

    /// The longest prefix of `name`'s UTF-8 that fits in `maxBytes` without cutting a character.
    static func utf8Prefix(_ name: String, maxBytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        for scalar in name.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if out.count + bytes.count > maxBytes { break }
            out += bytes
        }
        return out
    }
}
