import GattCore

/// The answer to one request: `{"ok":true,...}` or
/// `{"ok":false,"error":CODE,"message":TEXT}`, with the request's `id` last.
public enum ControlReply: Sendable, Equatable {
    /// `{"ok":true}`: set, watch, respond, advertise, disconnect (and a notify reply without `sent`).
    case success
    /// `notify`: `{"ok":true,"sent":N}`, the PDUs queued.
    case sent(Int)
    /// `get`: `{"ok":true,"value":{"hex":...}}`.
    case value(ControlValue)
    /// `status`: `{"ok":true,"advertising":...,"address":...,"connections":[...]}`.
    case status(ControlStatus)
    /// `bonds`: `{"ok":true,"bonds":[...]}`, oldest first.
    case bonds([ControlBond])
    /// `list_services` (every service) and `add_service` (the one added):
    /// `{"ok":true,"services":[{"id":…,"uuid":…,"start":…,"end":…,"runtime":…}]}`.
    case services([ControlService])
    /// `capture` started: `{"ok":true,"file":PATH,"records":TEXT}` (what the transport records).
    case capturing(file: String, records: String)
    /// `l2cap_listen` and `publish_l2cap_channel`: `{"ok":true,"channel":{…}}`.
    case l2capChannel(ControlL2CAPChannel)
    /// `list_l2cap_channels`: `{"ok":true,"channels":[…]}`.
    case l2capChannels([ControlL2CAPChannel])
    case failure(ControlError)

    public func json(id: JSONText?) -> JSONText {
        var members: [(String, JSONText)]
        switch self {
        case .success: members = [("ok", .bool(true))]
        case .sent(let n): members = [("ok", .bool(true)), ("sent", .int(n))]
        case .value(let v): members = [("ok", .bool(true)), ("value", v.json)]
        case .status(let s): members = [("ok", .bool(true))] + s.fields
        case .bonds(let b): members = [("ok", .bool(true)), ("bonds", .array(b.map(\.json)))]
        case .services(let list): members = [("ok", .bool(true)), ("services", .array(list.map(\.json)))]
        case .capturing(let file, let records): members = [("ok", .bool(true)), ("file", .string(file)), ("records", .string(records))]
        case .l2capChannel(let c): members = [("ok", .bool(true)), ("channel", c.json)]
        case .l2capChannels(let list): members = [("ok", .bool(true)), ("channels", .array(list.map(\.json)))]
        case .failure(let e):
            members = [("ok", .bool(false)), ("error", .string(e.code.rawValue)), ("message", .string(e.message))]
        }
        if let id { members.append(("id", id)) }
        return .object(members)
    }

    /// The line to send (without the newline).
    public func text(id: JSONText?) -> String { json(id: id).text }

    /// Decodes the members of a reply to `op` (an unknown `op` reads as `success`).
    static func decode(_ o: ControlObjectReader, op: String) throws(ControlError) -> ControlReply {
        guard try o.bool("ok") else {
            let code = try o.string("error")
            guard let c = ControlErrorCode(rawValue: code) else {
                throw ControlError(.invalidValue, "\(o.path("error")) must be an error code such as \"busy\", got \"\(code)\"")
            }
            return .failure(ControlError(c, try o.string("message")))
        }
        switch op {
        case "notify" where o.has("sent"): return .sent(try o.count("sent"))
        case "get": return .value(try o.value("value"))
        case "status": return .status(try ControlStatus(o))
        case "bonds":
            var bonds: [ControlBond] = []
            for b in try o.objects("bonds") { bonds.append(try ControlBond(b)) }
            return .bonds(bonds)
        case "list_services", "add_service":
            var list: [ControlService] = []
            for s in try o.objects("services") { list.append(try ControlService(s)) }
            return .services(list)
        case "capture" where o.has("records"): return .capturing(file: try o.string("file"), records: try o.string("records"))
        case "l2cap_listen", "publish_l2cap_channel": return .l2capChannel(try ControlL2CAPChannel(try o.object("channel")))
        case "list_l2cap_channels":
            var list: [ControlL2CAPChannel] = []
            for c in try o.objects("channels") { list.append(try ControlL2CAPChannel(c)) }
            return .l2capChannels(list)
        default: return .success
        }
    }
}

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
