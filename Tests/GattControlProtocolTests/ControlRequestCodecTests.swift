import GattControlProtocol
import GattCore
import Testing

func decode(_ line: String) throws(ControlRequestError) -> ControlRequest {
    try ControlRequest.decode(Array(line.utf8))
}

func failure(_ line: String) -> ControlRequestError? {
    do {
        _ = try decode(line)
        return nil
    } catch {
        return error
    }
}

func value(_ text: String, _ encoding: AttributeValueLiteral.Encoding = .hex) -> ControlValue {
    (try? ControlValue(text, as: encoding)) ?? ControlValue(hex: [0xEE, 0xEE])
}

@Suite("Control requests: one codec, exact text")
struct ControlRequestCodecTests {
    /// Every op: the typed request encodes to exactly this line, and the line decodes to it.
    @Test(arguments: [
        (ControlRequest(id: .rawNumber("1"), command: .notify(characteristic: "hr", value: value("00 48"), central: nil)),
         #"{"op":"notify","characteristic":"hr","value":{"hex":"00 48"},"id":1}"#),
        (ControlRequest(command: .notify(characteristic: "t", value: value("21.5", .utf8), central: "11:22:33:44:55:66")),
         #"{"op":"notify","characteristic":"t","value":{"utf8":"21.5"},"central":"11:22:33:44:55:66"}"#),
        (ControlRequest(id: .rawNumber("2"), command: .notify(characteristic: "hr", value: value("01"), central: nil, wait: true)),
         #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":true,"id":2}"#),
        (ControlRequest(id: .rawNumber("3"), command: .notifyValues(
            values: [ControlNotifyValue(characteristic: "hr", value: value("48")), ControlNotifyValue(characteristic: "t", value: value("21.5", .utf8))],
            central: nil)),
         #"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"48"}},{"characteristic":"t","value":{"utf8":"21.5"}}],"id":3}"#),
        (ControlRequest(command: .notifyValues(values: [ControlNotifyValue(characteristic: "hr", value: value("01"))], central: "11:22:33:44:55:66", wait: true)),
         #"{"op":"notify","values":[{"characteristic":"hr","value":{"hex":"01"}}],"central":"11:22:33:44:55:66","wait":true}"#),
        (ControlRequest(id: .string("a"), command: .set(characteristic: "2A19", value: value("ZA==", .base64))),
         #"{"op":"set","characteristic":"2A19","value":{"base64":"ZA=="},"id":"a"}"#),
        (ControlRequest(command: .get(characteristic: "level")), #"{"op":"get","characteristic":"level"}"#),
        (ControlRequest(id: .rawNumber("-3"), command: .status), #"{"op":"status","id":-3}"#),
        (ControlRequest(command: .watch(requests: nil)), #"{"op":"watch"}"#),
        (ControlRequest(command: .capture(file: "/var/lib/gattd/c.btsnoop")), #"{"op":"capture","file":"/var/lib/gattd/c.btsnoop"}"#),
        (ControlRequest(command: .capture(file: nil)), #"{"op":"capture","stop":true}"#),
        (ControlRequest(command: .l2capListen(channel: "stream")), #"{"op":"l2cap_listen","channel":"stream"}"#),
        (ControlRequest(command: .l2capUnlisten(channel: "stream")), #"{"op":"l2cap_unlisten","channel":"stream"}"#),
        (ControlRequest(command: .listL2CAPChannels), #"{"op":"list_l2cap_channels"}"#),
        (ControlRequest(command: .unpublishL2CAPChannel(id: "logs")), #"{"op":"unpublish_l2cap_channel","channel":"logs"}"#),
        (ControlRequest(command: .watch(requests: true)), #"{"op":"watch","requests":true}"#),
        (ControlRequest(id: .rawNumber("2"), command: .watch(requests: false)), #"{"op":"watch","requests":false,"id":2}"#),
        (ControlRequest(command: .respond(request: 7, result: .success(value("01")))),
         #"{"op":"respond","request":7,"status":"success","value":{"hex":"01"}}"#),
        (ControlRequest(command: .respond(request: 18446744073709551615, result: .failure(.writeNotPermitted))),
         #"{"op":"respond","request":18446744073709551615,"status":"write_not_permitted"}"#),
        (ControlRequest(command: .advertise(enable: false)), #"{"op":"advertise","enable":false}"#),
        (ControlRequest(command: .advertise(enable: true)), #"{"op":"advertise","enable":true}"#),
        (ControlRequest(command: .advertise(enable: false, set: "beacon")), #"{"op":"advertise","enable":false,"set":"beacon"}"#),
        (ControlRequest(id: .rawNumber("9"), command: .disconnect(central: "11:22:33:44:55:66")),
         #"{"op":"disconnect","central":"11:22:33:44:55:66","id":9}"#),
        (ControlRequest(command: .connectionParameters(central: "11:22:33:44:55:66", .preset(.lowLatency))),
         #"{"op":"connection_parameters","central":"11:22:33:44:55:66","preset":"low_latency"}"#),
        (ControlRequest(command: .connectionParameters(central: nil, .preset(.lowPower))), #"{"op":"connection_parameters","preset":"low_power"}"#),
        (ControlRequest(command: .connectionParameters(central: nil, .explicit(PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 33.75, latency: 2, timeoutMs: 4000)))),
         #"{"op":"connection_parameters","interval_ms":[15,33.75],"latency":2,"timeout_ms":4000}"#),
        (ControlRequest(command: .phy(central: "11:22:33:44:55:66", tx: .leCoded, rx: .le1M, coding: .s8)),
         #"{"op":"phy","central":"11:22:33:44:55:66","tx":"coded_s8","rx":"1m"}"#),
        (ControlRequest(command: .phy(central: "11:22:33:44:55:66", tx: .le2M, rx: .le2M, coding: .noPreference)),
         #"{"op":"phy","central":"11:22:33:44:55:66","tx":"2m","rx":"2m"}"#),
        (ControlRequest(command: .dataLength(central: "11:22:33:44:55:66", txOctets: 100)),
         #"{"op":"data_length","central":"11:22:33:44:55:66","tx_octets":100}"#),
        (ControlRequest(command: .signal(name: "improv.authorize")), #"{"op":"signal","name":"improv.authorize"}"#),
    ])
    func roundTrip(request: ControlRequest, line: String) throws {
        #expect(request.text == line)
        #expect(try decode(line) == request)
    }

    @Test func notifyValuesIsNotMixedWithCharacteristicAndNamesAtLeastOneValue() {
        #expect(failure(#"{"op":"notify","characteristic":"hr","values":[{"characteristic":"hr","value":{"hex":"01"}}]}"#)?.error
            == ControlError(.invalidValue, #""values" names the characteristics and values: leave out "characteristic" and "value""#))
        #expect(failure(#"{"op":"notify","values":[]}"#)?.error == ControlError(.invalidValue, #""values" must name at least one value"#))
        #expect(failure(#"{"op":"notify","values":[{"characteristic":"hr"}]}"#)?.error.message.contains(#""values"[0]"#) == true)
        #expect(failure(#"{"op":"notify","values":{}}"#)?.error.code == .invalidValue)
    }

    @Test func decodingIgnoresMemberOrderAndUnknownMembers() throws {
        #expect(try decode(#"{"id":1,"extra":[1,2],"value":{"hex":"01"},"characteristic":"x","op":"set"}"#)
            == ControlRequest(id: .rawNumber("1"), command: .set(characteristic: "x", value: value("01"))))
        #expect(try decode(#"{"op":"notify","characteristic":"hr","value":{"hex":"0048"}}"#).command
            == .notify(characteristic: "hr", value: value("0048"), central: nil))
    }

    @Test func valuesKeepTheirLiteralAndMeanTheirBytes() throws {
        guard case .notify(_, let v, _, _) = try decode(#"{"op":"notify","characteristic":"hr","value":{"hex":"00:48"}}"#).command else {
            Issue.record("not a notify")
            return
        }
        #expect((v.encoding, v.text, v.bytes) == (.hex, "00:48", [0x00, 0x48]))
        #expect(ControlValue(hex: [0x00, 0xAB]).json.text == #"{"hex":"00ab"}"#)
    }

    @Test func respondWithoutValueIsTheEmptyValue() throws {
        #expect(try decode(#"{"op":"respond","request":8,"status":"success"}"#).command
            == .respond(request: 8, result: .success(ControlValue(hex: []))))
    }

    @Test func idIsAShortStringOrAnInt64EchoedAsWritten() throws {
        #expect(try decode(#"{"op":"status","id":"abc"}"#).id == .string("abc"))
        #expect(try decode(#"{"op":"status","id":-9223372036854775808}"#).id == .rawNumber("-9223372036854775808"))
        #expect(try decode(#"{"op":"status","id":9223372036854775807}"#).id == .rawNumber("9223372036854775807"))
        #expect(try decode(#"{"op":"status","id":"\#(String(repeating: "é", count: 64))"}"#).id == .string(String(repeating: "é", count: 64)))
        let idRule = "\"id\" must be a string of at most 64 characters or an integer from -9223372036854775808 to 9223372036854775807"
        for (text, got) in [
            ("1.50", "a non-integer number (1.50)"), ("1e3", "a non-integer number (1e3)"), ("null", "null"), ("true", "a boolean"),
            ("9223372036854775808", "an integer out of range (9223372036854775808)"),
            (String(repeating: "9", count: 60_000), "a number of 60000 characters"),
            ("\"\(String(repeating: "x", count: 65))\"", "a string of 65 characters"), ("[1]", "an array"),
        ] {
            let e = failure(#"{"op":"status","id":\#(text)}"#)
            #expect(e == ControlRequestError(id: nil, error: ControlError(.invalidValue, "\(idRule), got \(got)")))
        }
    }

    /// Every decoding error: its code and its exact message, naming the member's path.
    @Test(arguments: [
        (#"{"op":"get""#, ControlError(.badJSON, "malformed JSON: line 1, column 12: unexpected end of file inside an object; expected ',' or '}'")),
        ("[]", ControlError(.badJSON, "a request must be a JSON object, got an array")),
        ("\"op\"", ControlError(.badJSON, "a request must be a JSON object, got a string")),
        (#"{"op":"get","characteristic":"a","characteristic":"b"}"#, ControlError(.badJSON, "duplicate member \"characteristic\"")),
        (#"{"op":"fly"}"#, ControlError(.unknownOp, "unknown op \"fly\"; expected notify, set, get, status, watch, respond, advertise, advertising_data, disconnect, capture, pairing_respond, bonds, unbond, add_service, remove_service, list_services, l2cap_listen, l2cap_unlisten, list_l2cap_channels, publish_l2cap_channel, unpublish_l2cap_channel, connection_parameters, phy, data_length or signal")),
        (#"{"op":"signal","name":""}"#, ControlError(.invalidValue, "\"name\" must be 1 to 64 bytes")),
        (#"{"op":"data_length","central":"11:22:33:44:55:66","tx_octets":300}"#,
         ControlError(.invalidValue, "\"tx_octets\" must be 27 ... 251 (LE Data Packet Length Extension), got 300")),
        (#"{"op":"phy","central":"11:22:33:44:55:66"}"#,
         ControlError(.missingField, "missing \"phy\" (or \"tx\" and \"rx\"): one of \"1m\", \"2m\", \"coded\", \"coded_s2\", \"coded_s8\"")),
        (#"{"op":"phy","central":"11:22:33:44:55:66","phy":"3m"}"#,
         ControlError(.invalidValue, "\"phy\" must be one of \"1m\", \"2m\", \"coded\", \"coded_s2\", \"coded_s8\", got \"3m\"")),
        (#"{"op":"phy","central":"11:22:33:44:55:66","tx":"coded_s2","rx":"coded_s8"}"#,
         ControlError(.invalidValue, "one LE Coded coding for both directions: \"coded_s2\" and \"coded_s8\" differ")),
        (#"{"op":"connection_parameters","central":"11:22:33:44:55:66"}"#,
         ControlError(.missingField, "missing \"preset\" (\"low_latency\", \"balanced\", \"low_power\") or \"interval_ms\", \"latency\" and \"timeout_ms\"")),
        (#"{"op":"connection_parameters","preset":"fast"}"#,
         ControlError(.invalidValue, "\"preset\" must be one of \"low_latency\", \"balanced\", \"low_power\", got \"fast\"")),
        (#"{"op":"connection_parameters","preset":"balanced","latency":0}"#,
         ControlError(.invalidValue, "\"preset\" names the parameters: leave out \"latency\"")),
        (#"{"op":"connection_parameters","interval_ms":[30],"latency":0,"timeout_ms":4000}"#,
         ControlError(.invalidValue, "\"interval_ms\" must be [min, max] in milliseconds, got an array")),
        (#"{"op":"connection_parameters","interval_ms":[30,45],"timeout_ms":4000}"#, ControlError(.missingField, "missing \"latency\"")),
        (#"{"op":"connection_parameters","interval_ms":[11.25,30],"latency":0,"timeout_ms":2000}"#,
         ControlError(.invalidValue, "\"interval_ms\": interval [11.25, 30] ms breaks the rule \"Apple: Interval Min ≥ 15 ms\"; nothing was sent")),
        (#"{"op":"connection_parameters","interval_ms":[30,45],"latency":40,"timeout_ms":4000}"#,
         ControlError(.invalidValue, "\"latency\": latency 40 breaks the rule \"Apple: Peripheral Latency ≤ 30\"; nothing was sent")),
        (#"{"op":"connection_parameters","interval_ms":[30,45],"latency":0,"timeout_ms":7000}"#,
         ControlError(.invalidValue, "\"timeout_ms\": timeout 7000 ms breaks the rule \"Apple: 2 seconds ≤ connSupervisionTimeout ≤ 6 seconds\"; nothing was sent")),
        (#"{"characteristic":"a"}"#, ControlError(.missingField, "missing \"op\"")),
        (#"{"op":"notify","value":{"hex":"01"}}"#, ControlError(.missingField, "missing \"characteristic\"")),
        (#"{"op":"notify","characteristic":"a"}"#, ControlError(.missingField, "missing \"value\"")),
        (#"{"op":"set","characteristic":"a"}"#, ControlError(.missingField, "missing \"value\"")),
        (#"{"op":"get"}"#, ControlError(.missingField, "missing \"characteristic\"")),
        (#"{"op":"respond","status":"success"}"#, ControlError(.missingField, "missing \"request\"")),
        (#"{"op":"respond","request":1}"#, ControlError(.missingField, "missing \"status\"")),
        (#"{"op":"advertise"}"#, ControlError(.missingField, "missing \"enable\"")),
        (#"{"op":"disconnect"}"#, ControlError(.missingField, "missing \"central\"")),
        (#"{"op":1}"#, ControlError(.invalidValue, "\"op\" must be a string, got a number (1)")),
        (#"{"op":"notify","characteristic":"a","value":{"hex":"01"},"central":7}"#, ControlError(.invalidValue, "\"central\" must be a string, got a number (7)")),
        (#"{"op":"set","characteristic":"a","value":{"hex":"0g"}}"#, ControlError(.invalidValue, "\"value\".\"hex\": 'g' at position 2 is not a hex digit")),
        (#"{"op":"set","characteristic":"a","value":{"hex":"012"}}"#, ControlError(.invalidValue, #""value"."hex": odd number of hex digits (3); every byte needs two digits, e.g. "0A" not "A""#)),
        (#"{"op":"set","characteristic":"a","value":{"latin1":"x"}}"#, ControlError(.invalidValue, "\"value\" must be an object with one of \"hex\", \"utf8\" or \"base64\"")),
        (#"{"op":"set","characteristic":"a","value":{"hex":"01","utf8":"x"}}"#, ControlError(.invalidValue, "\"value\" must be an object with one of \"hex\", \"utf8\" or \"base64\"")),
        (#"{"op":"set","characteristic":"a","value":"01"}"#, ControlError(.invalidValue, "\"value\" must be an object with one of \"hex\", \"utf8\" or \"base64\", got a string")),
        (#"{"op":"set","characteristic":"a","value":{"hex":1}}"#, ControlError(.invalidValue, "\"value\".\"hex\" must be a string, got a number (1)")),
        (#"{"op":"respond","request":-1,"status":"success"}"#, ControlError(.invalidValue, "\"request\" must be a non-negative integer, got a number (-1)")),
        (#"{"op":"respond","request":1.5,"status":"success"}"#, ControlError(.invalidValue, "\"request\" must be a non-negative integer, got a number (1.5)")),
        (#"{"op":"respond","request":1,"status":"meh"}"#, ControlError(.invalidValue, "\"status\" must be \"success\" or an ATT error name such as \"write_not_permitted\", got \"meh\"")),
        (#"{"op":"respond","request":1,"status":"unlikely_error","value":{"hex":"x"}}"#, ControlError(.invalidValue, "\"value\".\"hex\": 'x' at position 1 is not a hex digit")),
        (#"{"op":"advertise","enable":1}"#, ControlError(.invalidValue, "\"enable\" must be true or false, got a number (1)")),
    ])
    func errors(line: String, expected: ControlError) {
        #expect(failure(line)?.error == expected, "\(line)")
    }

    @Test func idEchoedOnErrorsOnceTheObjectIsRead() {
        #expect(failure(#"{"op":"fly","id":"q"}"#)?.id == .string("q"))
        #expect(failure(#"{"op":"get","id":5}"#)?.id == .rawNumber("5"))
        #expect(failure(#"{"op":"get","op":"set","id":5}"#) == ControlRequestError(id: .rawNumber("5"), error: ControlError(.badJSON, "duplicate member \"op\"")))
        #expect(failure(#"{"op":"get","id":5"#)?.id == nil)
    }
}
