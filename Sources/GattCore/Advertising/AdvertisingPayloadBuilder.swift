/// The legacy advertising set derived from an `AdvertisingConfiguration`: the two
/// payloads, the advertising parameters and the HCI commands that install them.
public struct AdvertisingPayloads: Sendable, Hashable {
    /// AD structures for LE Set Advertising Data, at most 31 bytes.
    public var advertisingData: [UInt8]
    /// AD structures for LE Set Scan Response Data, at most 31 bytes (empty when not scannable).
    public var scanResponseData: [UInt8]
    public var parameters: AdvertisingParameters
    /// True when the configuration is an iBeacon alone (see `AdvertisingPayloadBuilder`)
    /// and was therefore made non-connectable.
    public var isBeaconOnly: Bool
    /// Where the name, the UUID lists and the other fields went (for warnings and logs).
    public var facts: AdvertisingFacts

    public init(
        advertisingData: [UInt8], scanResponseData: [UInt8], parameters: AdvertisingParameters, isBeaconOnly: Bool,
        facts: AdvertisingFacts = AdvertisingFacts()
    ) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
        self.parameters = parameters
        self.isBeaconOnly = isBeaconOnly
        self.facts = facts
    }

    /// LE Set Advertising Parameters, LE Set Advertising Data, LE Set Scan Response
    /// Data — to send while advertising is disabled, before `enableCommand`.
    public var configurationCommands: [HCICommand] {
        [.leSetAdvertisingParameters(parameters), .leSetAdvertisingData(advertisingData), .leSetScanResponseData(scanResponseData)]
    }

    public static let enableCommand = HCICommand.leSetAdvertisingEnable(true)
    public static let disableCommand = HCICommand.leSetAdvertisingEnable(false)
}

/// A configuration that cannot be advertised. `field` is the JSON path of the
/// config entry at fault (e.g. `advertising.manufacturer_data[0]`).
public enum AdvertisingPayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An AD structure fits neither in the advertising data nor in the scan response.
    /// `scanResponseLeft` is nil when the advertisement is not scannable.
    case doesNotFit(field: String, needed: Int, advertisingDataLeft: Int, scanResponseLeft: Int?)
    /// A value out of range (e.g. the advertising interval).
    case invalidValue(field: String, reason: String)

    public var field: String {
        switch self {
        case .doesNotFit(let f, _, _, _), .invalidValue(let f, _): f
        }
    }

    public var description: String {
        switch self {
        case .doesNotFit(let field, let needed, let adv, let sr):
            let srText = sr.map { " and \($0) in the scan response" } ?? " (no scan response: the advertisement is not scannable)"
            return "\(field): needs \(needed) bytes, \(adv) left in the advertising data\(srText)"
        case .invalidValue(let field, let reason):
            return "\(field): \(reason)"
        }
    }
}

/// Builds legacy advertising and scan response payloads (Core Spec Supplement
/// Part A; Vol 3 Part C §11) from an `AdvertisingConfiguration`.
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
public enum AdvertisingPayloadBuilder {
    /// Legacy advertising and scan response payload capacity.
    public static let maximumDataLength = 31

    /// The flags AD structure: LE General Discoverable Mode | BR/EDR Not Supported.
    public static let flagsStructure: [UInt8] = [0x02, 0x01, 0x06]

    public static func build(_ config: AdvertisingConfiguration, deviceName: String) throws(AdvertisingPayloadError) -> AdvertisingPayloads {
        let beaconOnly = isBeaconOnly(config)
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
            throw .invalidValue(field: "advertising.interval_ms", reason: "must be within 20 ms ... 10240 ms")
        }
        guard intervalMin <= intervalMax else {
            throw .invalidValue(field: "advertising.interval_ms", reason: "minimum is greater than maximum")
        }
        let parameters = AdvertisingParameters(
            intervalMin: intervalMin, intervalMax: intervalMax, advertisingType: type,
            ownAddressType: config.ownAddressType.usesRandomAddress ? .random : .public)

        let layout = try Layout.best(config: config, name: beaconOnly ? "" : (config.localName ?? deviceName), useScanResponse: useScanResponse, beaconOnly: beaconOnly)
        var facts = layout.facts
        // The loader copies `name` into `localName` when the config has no `local_name`.
        facts.nameField = config.localName == nil || config.localName == deviceName ? "name" : "advertising.local_name"
        return AdvertisingPayloads(
            advertisingData: layout.advertising, scanResponseData: layout.scanResponse, parameters: parameters, isBeaconOnly: beaconOnly,
            facts: facts)
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

/// One placement attempt.
private struct Layout {
    var advertising: [UInt8]
    var scanResponse: [UInt8]
    let useScanResponse: Bool
    var facts = AdvertisingFacts()

    var advertisingLeft: Int { AdvertisingPayloadBuilder.maximumDataLength - advertising.count }
    var scanResponseLeft: Int { useScanResponse ? AdvertisingPayloadBuilder.maximumDataLength - scanResponse.count : 0 }

    /// Where the name goes in one attempt: bytes and whether they are the complete name.
    struct NamePart {
        var bytes: [UInt8]
        var complete: Bool
        var structure: [UInt8] {
            AdvertisingDataStructure(type: complete ? .completeLocalName : .shortenedLocalName, data: bytes).encoded
        }
    }

    static func best(
        config: AdvertisingConfiguration, name: String, useScanResponse: Bool, beaconOnly: Bool
    ) throws(AdvertisingPayloadError) -> Layout {
        let nameBytes = Array(name.utf8)
        let maxData = AdvertisingPayloadBuilder.maximumDataLength - 2
        // Shortened names from longest to shortest, cut at character boundaries.
        var shortened: [[UInt8]] = []
        var cut = AdvertisingPayloadBuilder.utf8Prefix(name, maxBytes: min(nameBytes.count - 1, maxData))
        while !cut.isEmpty {
            shortened.append(cut)
            cut = AdvertisingPayloadBuilder.utf8Prefix(name, maxBytes: cut.count - 1)
        }
        let complete = NamePart(bytes: nameBytes, complete: true)
        var attempts: [(adv: NamePart?, sr: NamePart?)] = []
        if !nameBytes.isEmpty {
            attempts.append((complete, nil))
            if useScanResponse { attempts += shortened.map { (NamePart(bytes: $0, complete: false), complete) } }
            if useScanResponse { attempts.append((nil, complete)) }
            attempts += shortened.map { (NamePart(bytes: $0, complete: false), nil) }
            if useScanResponse { attempts += shortened.map { (nil, NamePart(bytes: $0, complete: false)) } }
        }
        for attempt in attempts {
            if case .success(var layout) = place(config: config, nameInAdvertising: attempt.adv, nameInScanResponse: attempt.sr, useScanResponse: useScanResponse, beaconOnly: beaconOnly) {
                layout.facts.name = nameFact(advertising: attempt.adv, scanResponse: attempt.sr, full: name)
                return layout
            }
        }
        switch place(config: config, nameInAdvertising: nil, nameInScanResponse: nil, useScanResponse: useScanResponse, beaconOnly: beaconOnly) {
        case .failure(let error):
            throw error
        case .success(let layout):
            if nameBytes.isEmpty { return layout }
            // Everything else fits, but not even one character of the name.
            let smallest = shortened.last.map { $0.count + 2 } ?? (nameBytes.count + 2)
            throw .doesNotFit(
                field: "advertising.local_name", needed: smallest, advertisingDataLeft: layout.advertisingLeft,
                scanResponseLeft: useScanResponse ? layout.scanResponseLeft : nil)
        }
    }

    /// Places everything greedily, with the name parts given.
    static func place(
        config: AdvertisingConfiguration, nameInAdvertising: NamePart?, nameInScanResponse: NamePart?,
        useScanResponse: Bool, beaconOnly: Bool
    ) -> Result<Layout, AdvertisingPayloadError> {
        var layout = Layout(advertising: AdvertisingPayloadBuilder.flagsStructure, scanResponse: [], useScanResponse: useScanResponse)
        func failure(_ field: String, _ needed: Int) -> Result<Layout, AdvertisingPayloadError> {
            .failure(.doesNotFit(field: field, needed: needed, advertisingDataLeft: layout.advertisingLeft, scanResponseLeft: useScanResponse ? layout.scanResponseLeft : nil))
        }
        if let beacon = config.iBeacon {
            let s = AdvertisingPayloadBuilder.iBeaconStructure(beacon)
            guard s.count <= layout.advertisingLeft else { return failure("advertising.ibeacon", s.count) }
            layout.advertising += s
        }
        if beaconOnly { return .success(layout) }
        if let n = nameInAdvertising {
            guard n.structure.count <= layout.advertisingLeft else { return failure("advertising.local_name", n.structure.count) }
            layout.advertising += n.structure
        }
        if let n = nameInScanResponse {
            guard n.structure.count <= layout.scanResponseLeft else { return failure("advertising.local_name", n.structure.count) }
            layout.scanResponse += n.structure
        }

        // Service UUIDs by size.
        let groups: [(size: Int, complete: AdvertisingDataType, incomplete: AdvertisingDataType)] = [
            (2, .completeList16BitServiceUUIDs, .incompleteList16BitServiceUUIDs),
            (4, .completeList32BitServiceUUIDs, .incompleteList32BitServiceUUIDs),
            (16, .completeList128BitServiceUUIDs, .incompleteList128BitServiceUUIDs),
        ]
        for group in groups {
            let members: [(index: Int, bytes: [UInt8])] = config.serviceUUIDs.enumerated().compactMap { i, u in
                let bytes = uuidBytes(u)
                return bytes.count == group.size ? (i, bytes) : nil
            }
            if members.isEmpty { continue }
            let inAdvertising = min(members.count, max(0, (layout.advertisingLeft - 2) / group.size))
            let rest = members.count - inAdvertising
            let inScanResponse = min(rest, max(0, (layout.scanResponseLeft - 2) / group.size))
            if inAdvertising > 0 {
                let type = inAdvertising == members.count ? group.complete : group.incomplete
                layout.advertising += AdvertisingDataStructure(type: type, data: members[0..<inAdvertising].flatMap(\.bytes)).encoded
            }
            if inScanResponse > 0 {
                let type = inScanResponse == members.count ? group.complete : group.incomplete
                let range = inAdvertising..<(inAdvertising + inScanResponse)
                layout.scanResponse += AdvertisingDataStructure(type: type, data: members[range].flatMap(\.bytes)).encoded
            }
            layout.facts.uuidLists.append(.init(bits: group.size * 8, count: members.count, inAdvertising: inAdvertising, inScanResponse: inScanResponse))
            if inAdvertising + inScanResponse < members.count {
                // Reported after placing what fits, so the counts say what is really left.
                let first = members[inAdvertising + inScanResponse]
                return failure("advertising.service_uuids[\(first.index)]", 2 + group.size)
            }
        }

        var items: [(field: String, structure: [UInt8])] = []
        for (i, m) in config.manufacturerData.enumerated() {
            let data = [UInt8(m.companyID & 0xFF), UInt8(m.companyID >> 8)] + m.data
            items.append(("advertising.manufacturer_data[\(i)]", AdvertisingDataStructure(type: .manufacturerSpecificData, data: data).encoded))
        }
        for (i, s) in config.serviceData.enumerated() {
            let u = uuidBytes(s.uuid)
            let type: AdvertisingDataType =
                switch u.count {
                case 2: .serviceData16BitUUID
                case 4: .serviceData32BitUUID
                default: .serviceData128BitUUID
                }
            items.append(("advertising.service_data[\(i)]", AdvertisingDataStructure(type: type, data: u + s.data).encoded))
        }
        if let tx = config.txPower {
            items.append(("advertising.tx_power", AdvertisingDataStructure(type: .txPowerLevel, data: [UInt8(bitPattern: tx)]).encoded))
        }
        if let a = config.appearance {
            items.append(("advertising.appearance", AdvertisingDataStructure(type: .appearance, data: [UInt8(a & 0xFF), UInt8(a >> 8)]).encoded))
        }
        for item in items {
            // A structure longer than 31 bytes has a length byte that cannot describe it.
            if item.structure.count <= layout.advertisingLeft {
                layout.advertising += item.structure
            } else if item.structure.count <= layout.scanResponseLeft {
                layout.scanResponse += item.structure
                layout.facts.movedToScanResponse.append(item.field)
            } else {
                return failure(item.field, item.structure.count)
            }
        }
        return .success(layout)
    }

    /// The name's placement as a fact: the parts of one of `best`'s attempts, of the name `full`.
    static func nameFact(advertising: NamePart?, scanResponse: NamePart?, full: String) -> AdvertisingFacts.Name {
        func text(_ p: NamePart) -> String { String(decoding: p.bytes, as: UTF8.self) }
        switch (advertising, scanResponse) {
        case (nil, nil):
            return .none
        case (let a?, let s):
            if a.complete { return .complete(full, inScanResponse: false) }
            return .shortened(text(a), of: full, inScanResponse: false, completeInScanResponse: s?.complete ?? false)
        case (nil, let s?):
            return s.complete ? .complete(full, inScanResponse: true) : .shortened(text(s), of: full, inScanResponse: true, completeInScanResponse: false)
        }
    }

    /// 2, 4 or 16 little-endian bytes: the shortest advertising form of `uuid`.
    static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
        if let u = uuid.uuid16 { return [UInt8(u & 0xFF), UInt8(u >> 8)] }
        if let u = uuid.uuid32 { return [UInt8(u & 0xFF), UInt8((u >> 8) & 0xFF), UInt8((u >> 16) & 0xFF), UInt8(u >> 24)] }
        return uuid.littleEndian128
    }
}
