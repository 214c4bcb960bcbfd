import GattControlProtocol
import GattCore
import Testing

private let a = "AA:BB:CC:DD:EE:FF"

@Suite("Control events: one codec, exact text")
struct ControlEventCodecTests {
    /// Every event shape: encoded exactly so, and decoded back from the line.
    @Test(arguments: [
        (ControlEvent.connected(central: a), #"{"event":"connected","central":"AA:BB:CC:DD:EE:FF"}"#),
        (.connected(central: "4A:00:00:00:00:01", identity: "C0:00:00:00:00:02"),
         #"{"event":"connected","central":"4A:00:00:00:00:01","identity":"C0:00:00:00:00:02"}"#),
        (.disconnected(central: a, reason: "connection_timeout"),
         #"{"event":"disconnected","central":"AA:BB:CC:DD:EE:FF","reason":"connection_timeout"}"#),
        (.mtu(central: a, mtu: 247), #"{"event":"mtu","central":"AA:BB:CC:DD:EE:FF","mtu":247}"#),
        (.subscription(central: a, characteristic: "hr", notify: true, indicate: false),
         #"{"event":"subscribed","central":"AA:BB:CC:DD:EE:FF","characteristic":"hr","notify":true,"indicate":false}"#),
        (.subscription(central: a, characteristic: "hr", notify: false, indicate: true),
         #"{"event":"subscribed","central":"AA:BB:CC:DD:EE:FF","characteristic":"hr","notify":false,"indicate":true}"#),
        (.subscription(central: a, characteristic: "hr", notify: false, indicate: false),
         #"{"event":"unsubscribed","central":"AA:BB:CC:DD:EE:FF","characteristic":"hr","notify":false,"indicate":false}"#),
        (.written(central: a, characteristic: "label", value: ControlValue(hex: [0x61])),
         #"{"event":"written","central":"AA:BB:CC:DD:EE:FF","characteristic":"label","value":{"hex":"61"}}"#),
        (.readRequest(central: a, request: 3, characteristic: "c", offset: 22),
         #"{"event":"read_request","central":"AA:BB:CC:DD:EE:FF","request":3,"characteristic":"c","offset":22}"#),
        (.writeRequest(central: a, request: 4, characteristic: "c", offset: 0, value: ControlValue(hex: [1, 2])),
         #"{"event":"write_request","central":"AA:BB:CC:DD:EE:FF","request":4,"characteristic":"c","offset":0,"value":{"hex":"0102"}}"#),
        (.ready, #"{"event":"ready"}"#),
        (.signal(name: "improv.authorize"), #"{"event":"signal","name":"improv.authorize"}"#),
        (.confirmed(central: a, characteristic: "alert"), #"{"event":"confirmed","central":"AA:BB:CC:DD:EE:FF","characteristic":"alert"}"#),
        (
            .unconfirmed(central: a, characteristic: "alert", reason: "bearer_closed"),
            #"{"event":"unconfirmed","central":"AA:BB:CC:DD:EE:FF","characteristic":"alert","reason":"bearer_closed"}"#
        ),
        (.persistFailed(central: a, characteristic: "label", message: "disk full"),
         #"{"event":"persist_failed","central":"AA:BB:CC:DD:EE:FF","characteristic":"label","message":"disk full"}"#),
        (.persistFailed(central: nil, characteristic: "label", message: "disk full"),
         #"{"event":"persist_failed","characteristic":"label","message":"disk full"}"#),
        (.state(.poweredOn, reason: nil), #"{"event":"state","state":"powered_on"}"#),
        (.state(.poweredOff, reason: "hci0 is down; waiting for it to come back"),
         #"{"event":"state","state":"powered_off","reason":"hci0 is down; waiting for it to come back"}"#),
        (.state(.unauthorized, reason: "needs CAP_NET_ADMIN"), #"{"event":"state","state":"unauthorized","reason":"needs CAP_NET_ADMIN"}"#),
        (.advertising(set: "primary", .started, reason: nil), #"{"event":"advertising","set":"primary","state":"started"}"#),
        (.l2capChannel(channel: "stream", psm: 129, central: "11:22:33:44:55:66", mtu: 2048, peerMTU: 512),
         #"{"event":"l2cap_channel","channel":"stream","psm":129,"central":"11:22:33:44:55:66","mtu":2048,"peer_mtu":512}"#),
        (.link(central: a, LinkParameters(connectionInterval: 6, peripheralLatency: 4, supervisionTimeout: 300, txPHY: .le2M, rxPHY: .le1M, maxTxOctets: 251, maxRxOctets: 27)),
         #"{"event":"link","central":"AA:BB:CC:DD:EE:FF","interval_ms":7.5,"latency":4,"timeout_ms":3000,"tx_phy":"2m","rx_phy":"1m","tx_octets":251,"rx_octets":27}"#),
        (.link(central: a, LinkParameters(connectionInterval: 24, peripheralLatency: 0, supervisionTimeout: 72)),
         #"{"event":"link","central":"AA:BB:CC:DD:EE:FF","interval_ms":30,"latency":0,"timeout_ms":720,"tx_phy":null,"rx_phy":null,"tx_octets":null,"rx_octets":null}"#),
        (.advertising(set: "primary", .failed, reason: "LE Set Advertising Enable: Command Disallowed"),
         #"{"event":"advertising","set":"primary","state":"failed","reason":"LE Set Advertising Enable: Command Disallowed"}"#),
    ])
    func roundTrip(event: ControlEvent, line: String) throws {
        #expect(event.text == line)
        // An event is an event whatever request is outstanding.
        #expect(try message(line, answering: "notify") == .event(event))
        #expect(try message(line, answering: "status") == .event(event))
    }

    @Test func unknownEventsAreKeptAsSent() throws {
        let line = #"{"event":"thermal_alarm","central":"AA:BB:CC:DD:EE:FF","passkey":123456}"#
        guard case .unknownEvent(let name, let json) = try message(line, answering: "watch") else {
            Issue.record("not an unknown event")
            return
        }
        #expect(name == "thermal_alarm")
        #expect(json.text == line)
    }

    @Test(arguments: [
        (#"{"event":"mtu","central":"AA:BB:CC:DD:EE:FF"}"#, ControlError(.missingField, "missing \"mtu\"")),
        (#"{"event":"connected"}"#, ControlError(.missingField, "missing \"central\"")),
        (#"{"event":7}"#, ControlError(.invalidValue, "\"event\" must be a string, got a number (7)")),
        (#"{"event":"written","central":"A","characteristic":"c","value":{"b64":"x"}}"#,
         ControlError(.invalidValue, "\"value\" must be an object with one of \"hex\", \"utf8\" or \"base64\"")),
        (#"{"event":"read_request","central":"A","request":-2,"characteristic":"c","offset":0}"#,
         ControlError(.invalidValue, "\"request\" must be a non-negative integer, got a number (-2)")),
        (#"{"event":"subscribed","central":"A","characteristic":"c","notify":false,"indicate":false}"#,
         ControlError(.invalidValue, "\"subscribed\" does not match \"notify\" and \"indicate\" (unsubscribed)")),
        (#"{"event":"ready","event":"ready"}"#, ControlError(.badJSON, "duplicate member \"event\"")),
    ])
    func errors(line: String, expected: ControlError) {
        #expect(messageError(line) == expected, "\(line)")
    }

    @Test func disconnectReasonNames() {
        #expect(HCIStatus(rawValue: 0x13).controlName == "remote_user_terminated_connection")
        #expect(HCIStatus(rawValue: 0x08).controlName == "connection_timeout")
    }

    @Test func stringEscaping() {
        #expect(ControlEvent.confirmed(central: "a\"b\\c\nd\u{1}é", characteristic: "/").text
            == #"{"event":"confirmed","central":"a\"b\\c\nd\u0001é","characteristic":"/"}"#)
    }
}
