import GattControlProtocol
import GattCore
import Testing

func message(_ line: String, answering op: String) throws(ControlError) -> ControlMessage {
    try ControlMessage.decode(Array(line.utf8), answering: op)
}

func messageError(_ line: String, answering op: String = "status") -> ControlError? {
    do {
        _ = try message(line, answering: op)
        return nil
    } catch {
        return error
    }
}

let sampleStatus = ControlStatus(advertising: true, address: BluetoothAddress("F0:F0:F0:F0:F0:00") ?? .zero, connections: [
    {
        var c = ControlStatus.Central(address: BluetoothAddress("C0:00:00:00:00:01") ?? .zero, addressType: .random, mtu: 247, security: .medium,
                                      subscriptions: [ControlStatus.Subscription(characteristic: "hr", notify: true, indicate: false)], queue: 3)
        c.link = LinkParameters(connectionInterval: 9, peripheralLatency: 0, supervisionTimeout: 200, txPHY: .le2M, rxPHY: .leCoded, maxTxOctets: 251, maxRxOctets: 27)
        return c
    }(),
    ControlStatus.Central(address: BluetoothAddress("AA:BB:CC:DD:EE:FF") ?? .zero, addressType: .public, mtu: 23, security: .high,
                          subscriptions: [], queue: 0),
    {
        var rpa = ControlStatus.Central(address: BluetoothAddress("4A:00:00:00:00:01") ?? .zero, addressType: .random, mtu: 23, security: .medium,
                                        subscriptions: [], queue: 0)
        rpa.identity = BluetoothAddress("C0:00:00:00:00:02")
        return rpa
    }(),
])
let sampleStatusLine = #"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"random","mtu":247,"security":"medium","subscriptions":[{"characteristic":"hr","notify":true,"indicate":false}],"queue":3,"interval_ms":11.25,"latency":0,"timeout_ms":2000,"tx_phy":"2m","rx_phy":"coded","tx_octets":251,"rx_octets":27},{"central":"AA:BB:CC:DD:EE:FF","address_type":"public","mtu":23,"security":"high","subscriptions":[],"queue":0,"interval_ms":null,"latency":null,"timeout_ms":null,"tx_phy":null,"rx_phy":null,"tx_octets":null,"rx_octets":null},{"central":"4A:00:00:00:00:01","address_type":"random","mtu":23,"security":"medium","subscriptions":[],"queue":0,"identity":"C0:00:00:00:00:02","interval_ms":null,"latency":null,"timeout_ms":null,"tx_phy":null,"rx_phy":null,"tx_octets":null,"rx_octets":null}],"id":4}"#

/// A status whose controller is usable (`state` is the last member before `id`).
let poweredOnStatus: ControlStatus = {
    var s = ControlStatus(advertising: false, address: .zero, connections: [])
    s.state = .poweredOn
    return s
}()

/// A status with the controller `gattd --probe` would show (a 5.2 controller on the H4 host).
let controllerStatus: ControlStatus = {
    var s = ControlStatus(advertising: false, address: .zero, connections: [])
    var c = ControllerInfo()
    c.address = BluetoothAddress("C0:FF:EE:00:00:01") ?? .zero
    c.version = HCILocalVersionInformation(hciVersion: 11, hciSubversion: 0, lmpVersion: 11, companyIdentifier: 0x0059, lmpSubversion: 0)
    c.leFeatures = [.encryption, .extendedAdvertising]
    c.aclDataPacketLength = 251
    c.totalACLDataPackets = 4
    c.advertisingCommands = .extended(sets: 4, maximumDataLength: 1650)
    s.controller = ControlStatus.Controller(c)
    return s
}()
let controllerStatusLine = #"{"ok":true,"advertising":false,"address":"00:00:00:00:00:00","connections":[],"controller":{"address":"C0:FF:EE:00:00:01","core_version":"5.2","hci_version":11,"lmp_version":11,"manufacturer":"Nordic Semiconductor","company_id":89,"le_features":["LE Encryption","Extended Advertising"],"acl_buffers":{"length":251,"count":4},"advertising_commands":"extended","advertised_by":"host","max_sets":4,"max_data_length":1650,"extended_pdus":true,"sets_take_turns":false,"advertising":"extended advertising (4 sets, 1650 bytes of data per set)"}}"#

/// The controller as the transport said it reaches it (`summary`).
let summarizedStatus: ControlStatus = {
    var s = controllerStatus
    s.controller?.summary = "hci0 through bluetoothd 5.66; …"
    return s
}()

/// A status with two sets: the primary with its address, an extended beacon whose address the kernel picks.
let setsStatus: ControlStatus = {
    var s = ControlStatus(advertising: true, address: .zero, connections: [])
    func payloads(_ type: AdvertisingType, _ pdus: AdvertisingPDUs) -> AdvertisingPayloads {
        AdvertisingPayloads(
            advertisingData: [0x02, 0x01, 0x06], scanResponseData: [],
            parameters: AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x30, advertisingType: type), isBeaconOnly: false, pdus: pdus)
    }
    s.sets = [
        ControlStatus.AdvertisingSetStatus(
            id: "primary", advertising: true, payloads: payloads(.connectableUndirected, .legacy), address: BluetoothAddress("C0:FF:EE:00:00:01")),
        ControlStatus.AdvertisingSetStatus(
            id: "long", advertising: false, payloads: payloads(.nonConnectableUndirected, .extended(primaryPHY: .leCoded, secondaryPHY: .le2M))),
    ]
    return s
}()

@Suite("Control replies: one codec, exact text")
struct ControlReplyCodecTests {
    /// Each reply shape: encoded exactly so (`id` last), and decoded back as the reply to its op.
    @Test(arguments: [
        (ControlReply.success, JSONText?.none, "set", #"{"ok":true}"#),
        (.success, .string("w"), "watch", #"{"ok":true,"id":"w"}"#),
        (.sent(2), .rawNumber("7"), "notify", #"{"ok":true,"sent":2,"id":7}"#),
        (.value(ControlValue(hex: [0x00, 0xAB])), .string("x"), "get", #"{"ok":true,"value":{"hex":"00ab"},"id":"x"}"#),
        (.status(sampleStatus), .rawNumber("4"), "status", sampleStatusLine),
        (.status(ControlStatus(advertising: false, address: .zero, connections: [])), nil, "status",
         #"{"ok":true,"advertising":false,"address":"00:00:00:00:00:00","connections":[]}"#),
        (.status(controllerStatus), nil, "status", controllerStatusLine),
        (.status(summarizedStatus), nil, "status",
         String(controllerStatusLine.dropLast(2)) + #","summary":"hci0 through bluetoothd 5.66; …"}}"#),
        (.status(setsStatus), nil, "status", #"{"ok":true,"advertising":true,"address":"00:00:00:00:00:00","connections":[],"sets":[{"id":"primary","advertising":true,"pdus":"legacy","connectable":true,"scannable":true,"address":"C0:FF:EE:00:00:01","advertising_data":{"hex":"020106"},"scan_response":{"hex":""}},{"id":"long","advertising":false,"pdus":"extended","primary_phy":"coded","secondary_phy":"2m","connectable":false,"scannable":false,"advertising_data":{"hex":"020106"}}]}"#),
        (.status(poweredOnStatus), nil, "status",
         #"{"ok":true,"advertising":false,"address":"00:00:00:00:00:00","connections":[],"state":"powered_on"}"#),
        (.status(ControlStatus(advertising: true, address: .zero, connections: [], advertisingData: [0x02, 0x01, 0x06], scanResponse: [])), nil, "status",
         #"{"ok":true,"advertising":true,"address":"00:00:00:00:00:00","connections":[],"advertising_data":{"hex":"020106"},"scan_response":{"hex":""}}"#),
        (.status(ControlStatus(advertising: true, address: .zero, connections: [], advertisingData: [0x02, 0x01, 0x06])), nil, "status",
         #"{"ok":true,"advertising":true,"address":"00:00:00:00:00:00","connections":[],"advertising_data":{"hex":"020106"}}"#),
        (.capturing(file: "/tmp/c", records: "every HCI packet"), nil, "capture", #"{"ok":true,"file":"/tmp/c","records":"every HCI packet"}"#),
        (.success, nil, "capture", #"{"ok":true}"#),
        (.l2capChannel(ControlL2CAPChannel(id: "stream", psm: 129, security: .encryption, mtu: 2048)), nil, "l2cap_listen",
         #"{"ok":true,"channel":{"id":"stream","psm":129,"security":"encryption","mtu":2048}}"#),
        (.l2capChannels([ControlL2CAPChannel(id: "logs", psm: 200, security: .none, mtu: 23, listeners: 2, runtime: true)]), nil, "list_l2cap_channels",
         #"{"ok":true,"channels":[{"id":"logs","psm":200,"security":"none","mtu":23,"listeners":2,"runtime":true}]}"#),
        (.failure(ControlError(.unknownRequest, "no")), .null, "respond", #"{"ok":false,"error":"unknown_request","message":"no","id":null}"#),
    ])
    func roundTrip(reply: ControlReply, id: JSONText?, op: String, line: String) throws {
        #expect(reply.text(id: id) == line)
        #expect(try message(line, answering: op) == .reply(reply, id: id))
    }

    /// Every error code, as a failure reply.
    @Test(arguments: ControlErrorCode.allCases)
    func everyErrorCode(code: ControlErrorCode) throws {
        let line = #"{"ok":false,"error":"\#(code.rawValue)","message":"m \"q\"","id":1}"#
        #expect(ControlReply.failure(ControlError(code, "m \"q\"")).text(id: .rawNumber("1")) == line)
        #expect(try message(line, answering: "notify") == .reply(.failure(ControlError(code, "m \"q\"")), id: .rawNumber("1")))
    }

    @Test func theCodesAreTheWireNames() {
        #expect(ControlErrorCode.allCases.map(\.rawValue) == [
            "bad_json", "unknown_op", "missing_field", "unknown_characteristic", "invalid_value", "value_too_long",
            "not_notifiable", "busy", "unknown_request", "unknown_central", "no_pairing_prompt", "unknown_bond", "unknown_service",
            "persist_failed", "too_many_clients", "unknown_channel", "refused", "timeout",
        ])
    }

    @Test func decodingIgnoresMemberOrderAndUnknownMembers() throws {
        #expect(try message(#"{"id":1,"ok":false,"message":"full","error":"busy"}"#, answering: "notify")
            == .reply(.failure(ControlError(.busy, "full")), id: .rawNumber("1")))
        #expect(try message(#"{"value":{"utf8":"Hi"},"ok":true,"later":1}"#, answering: "get") == .reply(.value(value("Hi", .utf8)), id: nil))
        // A notify answered without "sent" is a plain success.
        #expect(try message(#"{"ok":true,"id":2}"#, answering: "notify") == .reply(.success, id: .rawNumber("2")))
    }

    @Test(arguments: [
        ("[1]", "status", ControlError(.badJSON, "a reply or an event must be a JSON object, got an array")),
        (#"{"ok":true"#, "status", ControlError(.badJSON, "malformed JSON: line 1, column 11: unexpected end of file inside an object; expected ',' or '}'")),
        (#"{"ok":true,"ok":false}"#, "set", ControlError(.badJSON, "duplicate member \"ok\"")),
        (#"{"id":1}"#, "set", ControlError(.missingField, "missing \"ok\"")),
        (#"{"ok":"yes"}"#, "set", ControlError(.invalidValue, "\"ok\" must be true or false, got a string")),
        (#"{"ok":false,"message":"m"}"#, "set", ControlError(.missingField, "missing \"error\"")),
        (#"{"ok":false,"error":"busy"}"#, "set", ControlError(.missingField, "missing \"message\"")),
        (#"{"ok":false,"error":"nope","message":"m"}"#, "set", ControlError(.invalidValue, "\"error\" must be an error code such as \"busy\", got \"nope\"")),
        (#"{"ok":true,"sent":-1}"#, "notify", ControlError(.invalidValue, "\"sent\" must be a non-negative integer, got a number (-1)")),
        (#"{"ok":true}"#, "get", ControlError(.missingField, "missing \"value\"")),
        (#"{"ok":true,"value":{"hex":"zz"}}"#, "get", ControlError(.invalidValue, "\"value\".\"hex\": 'z' at position 1 is not a hex digit")),
        (#"{"ok":true,"address":"F0:F0:F0:F0:F0:00","connections":[]}"#, "status", ControlError(.missingField, "missing \"advertising\"")),
        (#"{"ok":true,"advertising":true,"address":"F0","connections":[]}"#, "status",
         ControlError(.invalidValue, "\"address\" must be a Bluetooth address (AA:BB:CC:DD:EE:FF), got \"F0\"")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":{}}"#, "status",
         ControlError(.invalidValue, "\"connections\" must be an array, got an object")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[3]}"#, "status",
         ControlError(.invalidValue, "\"connections\"[0] must be an object, got a number (3)")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"random","security":"low","subscriptions":[],"queue":0}]}"#,
         "status", ControlError(.missingField, "missing \"connections\"[0].\"mtu\"")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"static","mtu":23,"security":"low","subscriptions":[],"queue":0}]}"#,
         "status", ControlError(.invalidValue, "\"connections\"[0].\"address_type\" must be one of \"public\", \"random\", got \"static\"")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"random","mtu":23,"security":"max","subscriptions":[],"queue":0}]}"#,
         "status", ControlError(.invalidValue, "\"connections\"[0].\"security\" must be one of \"low\", \"medium\", \"high\", got \"max\"")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"random","mtu":23,"security":"low","subscriptions":[{"characteristic":"hr","notify":1,"indicate":false}],"queue":0}]}"#,
         "status", ControlError(.invalidValue, "\"connections\"[0].\"subscriptions\"[0].\"notify\" must be true or false, got a number (1)")),
        (#"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"mtu":1,"mtu":2}]}"#,
         "status", ControlError(.badJSON, "duplicate member \"connections\"[0].\"mtu\"")),
    ])
    func errors(line: String, op: String, expected: ControlError) {
        #expect(messageError(line, answering: op) == expected, "\(line)")
    }
}
