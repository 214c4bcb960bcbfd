/// What one build may fill: the config path its fields are under, the capacity of the
/// advertising data and of the scan response (nil: no scan response), whether the
/// flags lead the advertising data, and whether the extended-PDU structure rules apply.
struct AdvertisingBudget {
    var path: String
    var advertising: Int
    var scanResponse: Int?
    var flags: Bool
    var extended: Bool

    var useScanResponse: Bool { scanResponse != nil }
    func field(_ key: String) -> String { "\(path).\(key)" }
}

/// One placement attempt.
struct AdvertisingLayout {
    var advertising: [UInt8]
    var scanResponse: [UInt8]
    let budget: AdvertisingBudget
    var facts = AdvertisingFacts()

    var useScanResponse: Bool { budget.useScanResponse }
    var advertisingLeft: Int { budget.advertising - advertising.count }
    var scanResponseLeft: Int { (budget.scanResponse ?? 0) - scanResponse.count }

    /// Where the name goes in one attempt: bytes and whether they are the complete name.
    struct NamePart {
        var bytes: [UInt8]
        var complete: Bool
        var structure: [UInt8] {
            AdvertisingDataStructure(type: complete ? .completeLocalName : .shortenedLocalName, data: bytes).encoded
        }
    }

    static func best(
        config: AdvertisingConfiguration, name: String, budget: AdvertisingBudget, beaconOnly: Bool
    ) throws(AdvertisingPayloadError) -> AdvertisingLayout {
        let useScanResponse = budget.useScanResponse
        let nameBytes = Array(name.utf8)
        let maxStructureData = AdvertisingPayloadBuilder.maximumStructureLength - 1
        let maxData = min(max(budget.advertising, budget.scanResponse ?? 0) - 2, maxStructureData)
        // Shortened names from longest to shortest, cut at character boundaries.
        var shortened: [[UInt8]] = []
        var cut = AdvertisingPayloadBuilder.utf8Prefix(name, maxBytes: min(nameBytes.count - 1, maxData))
        while !cut.isEmpty {
            shortened.append(cut)
            cut = AdvertisingPayloadBuilder.utf8Prefix(name, maxBytes: cut.count - 1)
        }
        let complete = NamePart(bytes: nameBytes, complete: true)
        // A complete name longer than one AD structure holds is only ever shortened.
        let completeFits = nameBytes.count <= maxStructureData
        var attempts: [(adv: NamePart?, sr: NamePart?)] = []
        if !nameBytes.isEmpty {
            if completeFits { attempts.append((complete, nil)) }
            if useScanResponse, completeFits { attempts += shortened.map { (NamePart(bytes: $0, complete: false), complete) } }
            if useScanResponse, completeFits { attempts.append((nil, complete)) }
            attempts += shortened.map { (NamePart(bytes: $0, complete: false), nil) }
            if useScanResponse { attempts += shortened.map { (nil, NamePart(bytes: $0, complete: false)) } }
        }
        for attempt in attempts {
            if case .success(var layout) = place(config: config, nameInAdvertising: attempt.adv, nameInScanResponse: attempt.sr, budget: budget, beaconOnly: beaconOnly) {
                layout.facts.name = nameFact(advertising: attempt.adv, scanResponse: attempt.sr, full: name)
                return layout
            }
        }
        switch place(config: config, nameInAdvertising: nil, nameInScanResponse: nil, budget: budget, beaconOnly: beaconOnly) {
        case .failure(let error):
            throw error
        case .success(let layout):
            if nameBytes.isEmpty { return layout }
            // Everything else fits, but not even one character of the name.
            let smallest = shortened.last.map { $0.count + 2 } ?? (nameBytes.count + 2)
            throw .doesNotFit(
                field: budget.field("local_name"), needed: smallest, advertisingDataLeft: layout.advertisingLeft,
                scanResponseLeft: useScanResponse ? layout.scanResponseLeft : nil)
        }
    }

    /// Places everything greedily, with the name parts given.
    static func place(
        config: AdvertisingConfiguration, nameInAdvertising: NamePart?, nameInScanResponse: NamePart?,
        budget: AdvertisingBudget, beaconOnly: Bool
    ) -> Result<AdvertisingLayout, AdvertisingPayloadError> {
        let useScanResponse = budget.useScanResponse
        var layout = AdvertisingLayout(advertising: budget.flags ? AdvertisingPayloadBuilder.flagsStructure : [], scanResponse: [], budget: budget)
        func failure(_ field: String, _ needed: Int) -> Result<AdvertisingLayout, AdvertisingPayloadError> {
            .failure(.doesNotFit(field: field, needed: needed, advertisingDataLeft: layout.advertisingLeft, scanResponseLeft: useScanResponse ? layout.scanResponseLeft : nil))
        }
        if let beacon = config.iBeacon {
            let s = AdvertisingPayloadBuilder.iBeaconStructure(beacon)
            guard s.count <= layout.advertisingLeft else { return failure(budget.field("ibeacon"), s.count) }
            layout.advertising += s
        }
        if beaconOnly { return .success(layout) }
        if let n = nameInAdvertising {
            guard n.structure.count <= layout.advertisingLeft else { return failure(budget.field("local_name"), n.structure.count) }
            layout.advertising += n.structure
        }
        if let n = nameInScanResponse {
            guard n.structure.count <= layout.scanResponseLeft else { return failure(budget.field("local_name"), n.structure.count) }
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
            // One list per size per payload, in one AD structure (Supplement Part A §1.1).
            let perList = (AdvertisingPayloadBuilder.maximumStructureLength - 1) / group.size
            let inAdvertising = min(members.count, perList, max(0, (layout.advertisingLeft - 2) / group.size))
            let rest = members.count - inAdvertising
            let inScanResponse = min(rest, perList, max(0, (layout.scanResponseLeft - 2) / group.size))
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
                let field = budget.field("service_uuids[\(first.index)]")
                if budget.extended, members.count > perList * (useScanResponse ? 2 : 1) {
                    return .failure(.invalidValue(
                        field: field,
                        reason: "is \(group.size * 8)-bit service UUID \(perList + 1) of \(members.count); one payload's list holds at most \(perList) (one AD structure per size, its length is one byte)"))
                }
                return failure(field, 2 + group.size)
            }
        }

        var items: [(field: String, structure: [UInt8])] = []
        for (i, m) in config.manufacturerData.enumerated() {
            let data = [UInt8(m.companyID & 0xFF), UInt8(m.companyID >> 8)] + m.data
            items.append((budget.field("manufacturer_data[\(i)]"), AdvertisingDataStructure(type: .manufacturerSpecificData, data: data).encoded))
        }
        for (i, s) in config.serviceData.enumerated() {
            let u = uuidBytes(s.uuid)
            let type: AdvertisingDataType =
                switch u.count {
                case 2: .serviceData16BitUUID
                case 4: .serviceData32BitUUID
                default: .serviceData128BitUUID
                }
            items.append((budget.field("service_data[\(i)]"), AdvertisingDataStructure(type: type, data: u + s.data).encoded))
        }
        if let tx = config.txPower {
            items.append((budget.field("tx_power"), AdvertisingDataStructure(type: .txPowerLevel, data: [UInt8(bitPattern: tx)]).encoded))
        }
        if let a = config.appearance {
            items.append((budget.field("appearance"), AdvertisingDataStructure(type: .appearance, data: [UInt8(a & 0xFF), UInt8(a >> 8)]).encoded))
        }
        for item in items {
            if budget.extended, item.structure.count > AdvertisingPayloadBuilder.maximumStructureLength + 1 {
                return .failure(.invalidValue(
                    field: item.field,
                    reason: "is \(item.structure.count - 1) bytes of AD type and data; one AD structure holds at most \(AdvertisingPayloadBuilder.maximumStructureLength) (its length is one byte)"))
            }
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
