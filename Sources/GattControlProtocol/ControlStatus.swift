import GattCore

/// The `status` reply.
public struct ControlStatus: Sendable, Equatable {
    public var advertising: Bool
    /// Whether the controller can be used (the last `state` event; left out while `unknown`).
    public var state: ControlControllerState = .unknown
    /// Every advertising set, the primary first (empty: not reported).
    public var sets: [AdvertisingSetStatus] = []
    /// The controller, once one was ready (`ControlStatus.Controller`).
    public var controller: Controller?

    /// One advertising set in `status`: `{"id","advertising","pdus","primary_phy","secondary_phy",
    /// "connectable","scannable","address","advertising_data","scan_response"}` (PHYs for extended
    /// sets only; `address` when gattd knows it: the kernel picks a non-connectable set's).
    public struct AdvertisingSetStatus: Sendable, Equatable {
        public var id: String
        public var advertising: Bool
        public var pdus: AdvertisingPDUs
        public var connectable: Bool
        public var scannable: Bool
        public var advertisingData: [UInt8]
        public var scanResponse: [UInt8]
        /// The address the set advertises from, when known.
        public var address: BluetoothAddress?

        public init(id: String, advertising: Bool, payloads p: AdvertisingPayloads, address: BluetoothAddress? = nil) {
            self.address = address
            self.id = id
            self.advertising = advertising
            pdus = p.pdus
            connectable = p.isConnectable
            scannable = p.isScannable
            advertisingData = p.advertisingData
            scanResponse = p.isScannable ? p.scanResponseData : []
        }

        var json: JSONText {
            var m: [(String, JSONText)] = [("id", .string(id)), ("advertising", .bool(advertising)), ("pdus", .string(pdus.isExtended ? "extended" : "legacy"))]
            if case .extended(let primary, let secondary) = pdus {
                m += [("primary_phy", .string(primary.configName)), ("secondary_phy", .string(secondary.configName))]
            }
            m += [("connectable", .bool(connectable)), ("scannable", .bool(scannable))]
            if let address { m.append(("address", .string(address.description))) }
            m.append(("advertising_data", ControlValue(hex: advertisingData).json))
            if scannable { m.append(("scan_response", ControlValue(hex: scanResponse).json)) }
            return .object(m)
        }

        init(_ o: ControlObjectReader) throws(ControlError) {
            id = try o.string("id")
            advertising = try o.bool("advertising")
            if try o.oneOf("pdus", ["legacy", "extended"]) == "extended" {
                let names = LEPHY.allCases.map(\.configName)
                pdus = .extended(
                    primaryPHY: LEPHY(configName: try o.oneOf("primary_phy", names)) ?? .le1M,
                    secondaryPHY: LEPHY(configName: try o.oneOf("secondary_phy", names)) ?? .le1M)
            } else {
                pdus = .legacy
            }
            connectable = try o.bool("connectable")
            scannable = try o.bool("scannable")
            advertisingData = try o.value("advertising_data").bytes
            scanResponse = o.has("scan_response") ? try o.value("scan_response").bytes : []
            address = o.has("address") ? try ControlStatus.address(o, "address") : nil
        }
    }
    /// The controller's (identity) address.
    public var address: BluetoothAddress
    public var connections: [Central]
    /// The advertising data as sent (LE Set Advertising Data); empty: not reported.
    public var advertisingData: [UInt8]
    /// The scan response as sent; nil when not reported or the advertisement is not scannable.
    public var scanResponse: [UInt8]?

    public init(advertising: Bool, address: BluetoothAddress, connections: [Central],
                advertisingData: [UInt8] = [], scanResponse: [UInt8]? = nil) {
        self.advertising = advertising
        self.address = address
        self.connections = connections
        self.advertisingData = advertisingData
        self.scanResponse = scanResponse
    }

    public struct Subscription: Sendable, Equatable {
        public var characteristic: String
        public var notify: Bool
        public var indicate: Bool
        public init(characteristic: String, notify: Bool, indicate: Bool) {
            self.characteristic = characteristic
            self.notify = notify
            self.indicate = indicate
        }
    }

    /// One connected central.
    public struct Central: Sendable, Equatable {
        public var address: BluetoothAddress
        /// Reported as `public` or `random` (identity types by their low bit).
        public var addressType: BluetoothAddressType
        public var mtu: Int
        public var security: SecurityLevel
        public var subscriptions: [Subscription]
        /// Notifications/indications queued and not yet sent.
        public var queue: Int
        /// The bonded central's identity address when `address` is a private address its IRK resolves.
        public var identity: BluetoothAddress?
        /// The link's parameters, PHYs and data length (unknown ones are `null`).
        public var link = LinkParameters()

        public init(address: BluetoothAddress, addressType: BluetoothAddressType, mtu: Int, security: SecurityLevel, subscriptions: [Subscription], queue: Int) {
            self.address = address
            self.addressType = addressType
            self.mtu = mtu
            self.security = security
            self.subscriptions = subscriptions
            self.queue = queue
        }
    }

    /// The `{"ok":true,...}` members after `ok`.
    var fields: [(String, JSONText)] {
        var payloads: [(String, JSONText)] = []
        if !advertisingData.isEmpty { payloads.append(("advertising_data", ControlValue(hex: advertisingData).json)) }
        if let scanResponse { payloads.append(("scan_response", ControlValue(hex: scanResponse).json)) }
        return [
            ("advertising", .bool(advertising)),
            ("address", .string(address.description)),
            ("connections", .array(connections.map { c in
                .object([
                    ("central", .string(c.address.description)),
                    ("address_type", .string(c.addressType.rawValue & 0x01 == 0 ? "public" : "random")),
                    ("mtu", .int(c.mtu)),
                    ("security", .string(c.security.description)),
                    ("subscriptions", .array(c.subscriptions.map { s in
                        .object([("characteristic", .string(s.characteristic)), ("notify", .bool(s.notify)), ("indicate", .bool(s.indicate))])
                    })),
                    ("queue", .int(c.queue)),
                ] + (c.identity.map { [("identity", JSONText.string($0.description))] } ?? []) + c.link.controlFields)
            })),
        ] + payloads + (state == .unknown ? [] : [("state", .string(state.rawValue))])
            + (sets.isEmpty ? [] : [("sets", .array(sets.map(\.json)))])
            + (controller.map { [("controller", $0.json)] } ?? [])
    }

    init(_ o: ControlObjectReader) throws(ControlError) {
        advertising = try o.bool("advertising")
        if o.has("sets") {
            for s in try o.objects("sets") { sets.append(try AdvertisingSetStatus(s)) }
        }
        if o.has("controller") { controller = try Controller(try o.object("controller")) }
        if o.has("state") {
            state = ControlControllerState(rawValue: try o.oneOf("state", ControlControllerState.allCases.map(\.rawValue))) ?? .unknown
        }
        address = try Self.address(o, "address")
        advertisingData = o.has("advertising_data") ? try o.value("advertising_data").bytes : []
        scanResponse = o.has("scan_response") ? try o.value("scan_response").bytes : nil
        connections = []
        for c in try o.objects("connections") {
            let type: BluetoothAddressType = try c.oneOf("address_type", ["public", "random"]) == "public" ? .public : .random
            let securityNames = [SecurityLevel.low, .medium, .high].map(\.description)
            let security = try c.oneOf("security", securityNames)
            var subscriptions: [Subscription] = []
            for s in try c.objects("subscriptions") {
                subscriptions.append(Subscription(characteristic: try s.string("characteristic"), notify: try s.bool("notify"), indicate: try s.bool("indicate")))
            }
            connections.append(Central(
                address: try Self.address(c, "central"), addressType: type, mtu: try c.count("mtu"),
                security: [SecurityLevel.low, .medium, .high].first { $0.description == security } ?? .low,
                subscriptions: subscriptions, queue: try c.count("queue")))
            if c.has("identity") { connections[connections.count - 1].identity = try Self.address(c, "identity") }
            connections[connections.count - 1].link = try LinkParameters(control: c)
        }
    }

    fileprivate static func address(_ o: ControlObjectReader, _ key: String) throws(ControlError) -> BluetoothAddress {
        let s = try o.string(key)
        guard let a = BluetoothAddress(s) else {
            throw ControlError(.invalidValue, "\(o.path(key)) must be a Bluetooth address (AA:BB:CC:DD:EE:FF), got \"\(s)\"")
        }
        return a
    }
}
