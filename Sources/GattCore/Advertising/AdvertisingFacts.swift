/// What `AdvertisingPayloadBuilder` did with a configuration, as data: where the local
/// name went and in which form, how each service UUID list was split, which configured
/// fields went to the scan response. `gattd --check-config` turns `warnings` into
/// lines on stderr; the daemon's "advertising as …" line is `logDescription`.
public struct AdvertisingFacts: Sendable, Hashable {
    /// Where the local name is advertised.
    public enum Name: Sendable, Hashable {
        /// No name (an iBeacon alone is advertised without one).
        case none
        /// The Complete Local Name; `inScanResponse` when it is only in the scan response.
        case complete(String, inScanResponse: Bool)
        /// A Shortened Local Name (`shortened`, in the scan response when `inScanResponse`)
        /// of `full`; `completeInScanResponse` when the complete name is in the scan response.
        case shortened(String, of: String, inScanResponse: Bool, completeInScanResponse: Bool)
    }

    /// One service UUID size: how many UUIDs the config lists, and how many of them are in
    /// each packet. A packet's list is "Complete" only when it holds all `count`.
    public struct UUIDList: Sendable, Hashable {
        public var bits: Int
        public var count: Int
        public var inAdvertising: Int
        public var inScanResponse: Int
        /// The list scanners see first (the advertising data) names every UUID of this size.
        public var isCompleteInAdvertising: Bool { inAdvertising == count }
    }

    /// A fact worth a warning: the config field it is about and what happened.
    public struct Warning: Sendable, Hashable, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { "\(field): \(message)" }
    }

    public var name: Name
    /// The config field the name comes from: `advertising.local_name`, or `name` when
    /// there is no local name (or it is the same as `name`).
    public var nameField: String
    public var uuidLists: [UUIDList]
    /// Config fields (`advertising.manufacturer_data[0]`, …) placed in the scan response
    /// because the advertising data had no room for them.
    public var movedToScanResponse: [String]
    /// The config path of the set (`advertising`, `advertising_sets[N]`) the warnings are about.
    public var path = AdvertisingSet.primaryPath

    public init(name: Name = .none, nameField: String = "name", uuidLists: [UUIDList] = [], movedToScanResponse: [String] = []) {
        self.name = name
        self.nameField = nameField
        self.uuidLists = uuidLists
        self.movedToScanResponse = movedToScanResponse
    }

    /// One warning per surprise: a shortened name, an incomplete UUID list, a field in the
    /// scan response (which only active scanners request).
    public var warnings: [Warning] {
        var out: [Warning] = []
        switch name {
        case .none:
            break
        case .complete(let n, let inScanResponse):
            if inScanResponse {
                out.append(Warning(field: nameField, message: "the local name \"\(n)\" is only in the scan response (no room in the advertising data)"))
            }
        case .shortened(let short, let full, let inScanResponse, let completeInScanResponse):
            let whereShort = inScanResponse ? "the scan response" : "the advertising data"
            let complete = completeInScanResponse ? "the complete name is in the scan response" : "the complete name is not advertised"
            out.append(Warning(
                field: nameField,
                message: "the local name \"\(full)\" (\(full.utf8.count) bytes) is advertised shortened as \"\(short)\" in \(whereShort); \(complete)"))
        }
        for list in uuidLists {
            if list.inAdvertising == 0 {
                out.append(Warning(
                    field: "\(path).service_uuids",
                    message: "the \(list.bits)-bit service UUIDs are only in the scan response (no room in the advertising data)"))
            } else if !list.isCompleteInAdvertising {
                out.append(Warning(
                    field: "\(path).service_uuids",
                    message: "the \(list.bits)-bit service UUID list in the advertising data is incomplete (\(list.inAdvertising) of \(list.count)); the rest are in the scan response"))
            }
        }
        for field in movedToScanResponse {
            out.append(Warning(field: field, message: "moved to the scan response (no room in the advertising data)"))
        }
        return out
    }

    /// The daemon's log line when advertising starts: what scanners actually see.
    /// `advertising as "NAME"` when the complete name is in the advertising data, then in
    /// parentheses the name's form and each service UUID list's completeness.
    public func logDescription(beaconOnly: Bool) -> String {
        var details: [String] = []
        let head: String
        switch name {
        case .none:
            head = beaconOnly ? "advertising an iBeacon (non-connectable, no local name)" : "advertising without a local name"
        case .complete(let n, let inScanResponse):
            head = "advertising as \"\(n)\""
            details.append(inScanResponse ? "complete local name, in the scan response only" : "complete local name")
        case .shortened(let short, let full, let inScanResponse, let completeInScanResponse):
            head = "advertising as \"\(short)\""
            var d = "shortened local name\(inScanResponse ? " in the scan response" : "") of \"\(full)\""
            d += completeInScanResponse ? ", complete name in the scan response" : ", complete name not advertised"
            details.append(d)
        }
        for list in uuidLists {
            if list.isCompleteInAdvertising {
                details.append("\(list.bits)-bit service UUIDs complete")
            } else if list.inAdvertising == 0 {
                details.append("\(list.bits)-bit service UUIDs in the scan response only")
            } else {
                details.append("\(list.bits)-bit service UUIDs incomplete (\(list.inAdvertising) of \(list.count) in the advertising data)")
            }
        }
        if !movedToScanResponse.isEmpty { details.append("in the scan response: " + movedToScanResponse.joined(separator: ", ")) }
        return details.isEmpty ? head : "\(head) (\(details.joined(separator: "; ")))"
    }
}
