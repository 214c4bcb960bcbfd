import GattCore

extension ControlStatus {
    /// The controller in `status` (`"controller"`): what it is and can do, as gattd logged it
    /// when it came up (`ControllerInfo`); left out until a controller was ready.
    /// `{"address","core_version","hci_version","lmp_version","manufacturer","company_id",
    /// "le_features":[names],"acl_buffers":{"length","count"},"advertising_commands":"legacy"|"extended",
    /// "advertised_by":"host"|"kernel","max_sets","max_data_length","extended_pdus","sets_take_turns",
    /// "advertising":"in words","summary":"how gattd reaches it"}` (`max_sets` left out when unlimited;
    /// the version fields when unknown; `summary` when the transport said).
    public struct Controller: Sendable, Equatable {
        public var address: BluetoothAddress
        /// "5.2"
        public var coreVersion: String?
        public var hciVersion: Int?
        public var lmpVersion: Int?
        public var manufacturer: String?
        public var companyID: Int?
        public var leFeatures: [String]
        public var aclDataPacketLength: Int
        public var totalACLDataPackets: Int
        public var extendedAdvertisingCommands: Bool
        public var advertisedByKernel: Bool
        public var maximumSets: Int?
        public var maximumDataLength: Int
        public var extendedPDUs: Bool
        public var setsTakeTurns: Bool
        /// `ControllerInfo.advertisingSummary`.
        public var advertising: String
        /// How gattd reaches it, as the transport said when it came up ("hci0 … through
        /// bluetoothd 5.66; …"), with what that back end cannot do.
        public var summary: String?

        public init(_ c: ControllerInfo) {
            address = c.address
            coreVersion = c.version.map { HCILocalVersionInformation.coreVersion($0.hciVersion) }
            hciVersion = c.version.map { Int($0.hciVersion) }
            lmpVersion = c.version.map { Int($0.lmpVersion) }
            manufacturer = c.version?.manufacturer
            companyID = c.version.map { Int($0.companyIdentifier) }
            leFeatures = c.leFeatures.featureNames
            aclDataPacketLength = c.aclDataPacketLength
            totalACLDataPackets = c.totalACLDataPackets
            extendedAdvertisingCommands = c.advertisingCommands != .legacy
            advertisedByKernel = c.advertisingOwner != .host
            let limits = c.limits
            maximumSets = limits.numberOfSets
            maximumDataLength = limits.maximumDataLength
            extendedPDUs = limits.extendedPDUs
            setsTakeTurns = limits.setsTakeTurns
            advertising = c.advertisingSummary
        }

        var json: JSONText {
            var m: [(String, JSONText)] = [("address", .string(address.description))]
            if let coreVersion, let hciVersion, let lmpVersion, let manufacturer, let companyID {
                m += [("core_version", .string(coreVersion)), ("hci_version", .int(hciVersion)), ("lmp_version", .int(lmpVersion)),
                      ("manufacturer", .string(manufacturer)), ("company_id", .int(companyID))]
            }
            m += [
                ("le_features", .array(leFeatures.map { .string($0) })),
                ("acl_buffers", .object([("length", .int(aclDataPacketLength)), ("count", .int(totalACLDataPackets))])),
                ("advertising_commands", .string(extendedAdvertisingCommands ? "extended" : "legacy")),
                ("advertised_by", .string(advertisedByKernel ? "kernel" : "host")),
            ]
            if let maximumSets { m.append(("max_sets", .int(maximumSets))) }
            m += [("max_data_length", .int(maximumDataLength)), ("extended_pdus", .bool(extendedPDUs)),
                  ("sets_take_turns", .bool(setsTakeTurns)), ("advertising", .string(advertising))]
            if let summary { m.append(("summary", .string(summary))) }
            return .object(m)
        }

        init(_ o: ControlObjectReader) throws(ControlError) {
            guard let a = BluetoothAddress(try o.string("address")) else {
                throw ControlError(.invalidValue, "\(o.path("address")) must be a Bluetooth address")
            }
            address = a
            if o.has("core_version") {
                coreVersion = try o.string("core_version")
                hciVersion = try o.count("hci_version")
                lmpVersion = try o.count("lmp_version")
                manufacturer = try o.string("manufacturer")
                companyID = try o.count("company_id")
            }
            guard case .array(let items)? = o.raw("le_features")?.kind else {
                throw ControlError(.invalidValue, "\(o.path("le_features")) must be an array of strings")
            }
            leFeatures = []
            for item in items {
                guard case .string(let s) = item.kind else { throw ControlError(.invalidValue, "\(o.path("le_features")) must be an array of strings") }
                leFeatures.append(s)
            }
            let acl = try o.object("acl_buffers")
            aclDataPacketLength = try acl.count("length")
            totalACLDataPackets = try acl.count("count")
            extendedAdvertisingCommands = try o.oneOf("advertising_commands", ["legacy", "extended"]) == "extended"
            advertisedByKernel = try o.oneOf("advertised_by", ["host", "kernel"]) == "kernel"
            maximumSets = o.has("max_sets") ? try o.count("max_sets") : nil
            maximumDataLength = try o.count("max_data_length")
            extendedPDUs = try o.bool("extended_pdus")
            setsTakeTurns = try o.bool("sets_take_turns")
            advertising = try o.string("advertising")
            summary = o.has("summary") ? try o.string("summary") : nil
        }
    }
}
