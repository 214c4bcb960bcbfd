import GattCore
import Testing

@testable import GattDaemon

private func parse(_ line: String) throws(ControlRequestError) -> ControlRequest {
    try ControlRequest.parse(Array(line.utf8))
}

private func failure(_ line: String) -> ControlRequestError? {
    do {
        _ = try parse(line)
        return nil
    } catch {
        return error
    }
}

@Suite("Control request parsing")
struct ControlRequestTests {
    @Test func notify() throws {
        let r = try parse(#"{"op":"notify","characteristic":"hr","value":{"hex":"00 48"},"id":1}"#)
        #expect(r == ControlRequest(id: .rawNumber("1"), command: .notify(characteristic: "hr", value: [0x00, 0x48], central: nil)))
        let t = try parse(#"{"op":"notify","characteristic":"hr","value":{"utf8":"hi"},"central":"AA:BB:CC:DD:EE:FF"}"#)
        #expect(t.command == .notify(characteristic: "hr", value: [0x68, 0x69], central: "AA:BB:CC:DD:EE:FF"))
        #expect(t.id == nil)
    }

    @Test func setGetStatusWatch() throws {
        #expect(try parse(#"{"op":"set","characteristic":"2A19","value":{"base64":"ZA=="}}"#).command == .set(characteristic: "2A19", value: [0x64]))
        #expect(try parse(#"{"op":"get","characteristic":"level"}"#).command == .get(characteristic: "level"))
        #expect(try parse(#"{"op":"status"}"#).command == .status)
        #expect(try parse(#"{"op":"watch","extra":[1,2]}"#).command == .watch)
    }

    @Test func respond() throws {
        #expect(try parse(#"{"op":"respond","request":7,"status":"success","value":{"hex":"01"}}"#).command
            == .respond(request: 7, result: .success([0x01])))
        #expect(try parse(#"{"op":"respond","request":8,"status":"success"}"#).command == .respond(request: 8, result: .success([])))
        #expect(try parse(#"{"op":"respond","request":9,"status":"write_not_permitted"}"#).command
            == .respond(request: 9, result: .failure(.writeNotPermitted)))
    }

    @Test func advertiseAndDisconnect() throws {
        #expect(try parse(#"{"op":"advertise","enable":false}"#).command == .advertise(enable: false))
        #expect(try parse(#"{"op":"disconnect","central":"11:22:33:44:55:66"}"#).command == .disconnect(central: "11:22:33:44:55:66"))
    }

    @Test func idIsAShortStringOrAnInt64EchoedAsWritten() throws {
        #expect(try parse(#"{"op":"status","id":"abc"}"#).id == .string("abc"))
        #expect(try parse(#"{"op":"status","id":-9223372036854775808}"#).id == .rawNumber("-9223372036854775808"))
        #expect(try parse(#"{"op":"status","id":9223372036854775807}"#).id == .rawNumber("9223372036854775807"))
        #expect(try parse(#"{"op":"status","id":"\#(String(repeating: "é", count: 64))"}"#).id == .string(String(repeating: "é", count: 64)))
        // Anything else is rejected, not echoed.
        let idRule = "\"id\" must be a string of at most 64 characters or an integer from -9223372036854775808 to 9223372036854775807"
        for (text, got) in [
            ("1.50", "a non-integer number (1.50)"), ("1e3", "a non-integer number (1e3)"), ("null", "null"), ("true", "a boolean"),
            ("9223372036854775808", "an integer out of range (9223372036854775808)"),
            (String(repeating: "9", count: 60_000), "a number of 60000 characters"),
            ("\"\(String(repeating: "x", count: 65))\"", "a string of 65 characters"),
        ] {
            let e = failure(#"{"op":"status","id":\#(text)}"#)
            #expect(e?.id == nil)
            #expect(e?.error == ControlError(.invalidValue, "\(idRule), got \(got)"))
        }
        let e = failure(#"{"op":"status","id":[1]}"#)
        #expect(e?.error.code == .invalidValue)
        #expect(e?.id == nil)
    }

    @Test(arguments: [
        (#"{"op":"get""#, ControlErrorCode.badJSON),
        ("[]", .badJSON),
        ("\"op\"", .badJSON),
        (#"{"op":"get","characteristic":"a","characteristic":"b"}"#, .badJSON),
        (#"{"op":"fly"}"#, .unknownOp),
        (#"{"characteristic":"a"}"#, .missingField),
        (#"{"op":"notify","value":{"hex":"01"}}"#, .missingField),
        (#"{"op":"notify","characteristic":"a"}"#, .missingField),
        (#"{"op":"set","characteristic":"a"}"#, .missingField),
        (#"{"op":"get"}"#, .missingField),
        (#"{"op":"respond","status":"success"}"#, .missingField),
        (#"{"op":"respond","request":1}"#, .missingField),
        (#"{"op":"advertise"}"#, .missingField),
        (#"{"op":"disconnect"}"#, .missingField),
        (#"{"op":1}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"hex":"0g"}}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"hex":"012"}}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"base64":"*"}}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"latin1":"x"}}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"hex":"01","utf8":"x"}}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":"01"}"#, .invalidValue),
        (#"{"op":"set","characteristic":"a","value":{"hex":1}}"#, .invalidValue),
        (#"{"op":"respond","request":-1,"status":"success"}"#, .invalidValue),
        (#"{"op":"respond","request":1.5,"status":"success"}"#, .invalidValue),
        (#"{"op":"respond","request":1,"status":"meh"}"#, .invalidValue),
        (#"{"op":"advertise","enable":1}"#, .invalidValue),
    ])
    func errors(line: String, code: ControlErrorCode) {
        let e = failure(line)
        #expect(e?.error.code == code, "\(line)")
        #expect(e?.error.message.isEmpty == false)
    }

    @Test func idEchoedOnErrorsAfterJSONParsed() {
        #expect(failure(#"{"op":"fly","id":"q"}"#)?.id == .string("q"))
        #expect(failure(#"{"op":"get","id":5}"#)?.id == .rawNumber("5"))
        #expect(failure(#"{"op":"get","id":5"#)?.id == nil)
    }
}

@Suite("Control replies and events (exact JSON)")
struct ControlReplyTests {
    @Test func replies() {
        #expect(ControlReply.success.text(id: nil) == #"{"ok":true}"#)
        #expect(ControlReply.ok([("sent", .int(2))]).text(id: .rawNumber("7")) == #"{"ok":true,"sent":2,"id":7}"#)
        #expect(ControlReply.ok([("value", .hexValue([0x00, 0xAB]))]).text(id: .string("x")) == #"{"ok":true,"value":{"hex":"00ab"},"id":"x"}"#)
        #expect(ControlReply.failure(ControlError(.busy, "full")).text(id: nil) == #"{"ok":false,"error":"busy","message":"full"}"#)
        #expect(ControlReply.failure(ControlError(.unknownRequest, "no")).text(id: .null) == #"{"ok":false,"error":"unknown_request","message":"no","id":null}"#)
    }

    @Test func stringEscaping() {
        #expect(JSONText.string("a\"b\\c\nd\u{1}é").text == #""a\"b\\c\nd\u0001é""#)
    }

    @Test func events() {
        let a = "AA:BB:CC:DD:EE:FF"
        #expect(ControlEvent.connected(central: a).text == #"{"event":"connected","central":"AA:BB:CC:DD:EE:FF"}"#)
        #expect(ControlEvent.disconnected(central: a, reason: "connection_timeout").text
            == #"{"event":"disconnected","central":"AA:BB:CC:DD:EE:FF","reason":"connection_timeout"}"#)
        #expect(ControlEvent.mtu(central: a, mtu: 247).text == #"{"event":"mtu","central":"AA:BB:CC:DD:EE:FF","mtu":247}"#)
        #expect(ControlEvent.subscription(central: a, characteristic: "hr", notify: true, indicate: false).text
            == #"{"event":"subscribed","central":"AA:BB:CC:DD:EE:FF","characteristic":"hr","notify":true,"indicate":false}"#)
        #expect(ControlEvent.subscription(central: a, characteristic: "hr", notify: false, indicate: false).text
            == #"{"event":"unsubscribed","central":"AA:BB:CC:DD:EE:FF","characteristic":"hr","notify":false,"indicate":false}"#)
        #expect(ControlEvent.written(central: a, characteristic: "label", value: [0x61]).text
            == #"{"event":"written","central":"AA:BB:CC:DD:EE:FF","characteristic":"label","value":{"hex":"61"}}"#)
        #expect(ControlEvent.readRequest(central: a, request: 3, characteristic: "c", offset: 22).text
            == #"{"event":"read_request","central":"AA:BB:CC:DD:EE:FF","request":3,"characteristic":"c","offset":22}"#)
        #expect(ControlEvent.writeRequest(central: a, request: 4, characteristic: "c", offset: 0, value: [1, 2]).text
            == #"{"event":"write_request","central":"AA:BB:CC:DD:EE:FF","request":4,"characteristic":"c","offset":0,"value":{"hex":"0102"}}"#)
        #expect(ControlEvent.ready.text == #"{"event":"ready"}"#)
        #expect(ControlEvent.confirmed(central: a, characteristic: "alert").text
            == #"{"event":"confirmed","central":"AA:BB:CC:DD:EE:FF","characteristic":"alert"}"#)
    }

    @Test func eventsFromATTServerEvents() {
        let db = GATTDatabase(deviceName: "T", services: [
            ServiceDefinition(id: "s", uuid: 0x180F, characteristics: [
                CharacteristicDefinition(id: "level", uuid: 0x2A19, properties: [.read, .notify], value: [0x64], maxLength: 1)
            ])
        ])
        let level = db.characteristicIndex(named: "level") ?? -1
        let central: (ConnectionID) -> String? = { $0.rawValue == 1 ? "01:02:03:04:05:06" : nil }
        #expect(ControlEvent.from(.subscriptionChanged(ConnectionID(1), characteristic: level, notify: true, indicate: false), database: db, central: central)
            == .subscription(central: "01:02:03:04:05:06", characteristic: "level", notify: true, indicate: false))
        #expect(ControlEvent.from(.readRequest(id: PendingRequestID(9), ConnectionID(1), characteristic: level, offset: 0), database: db, central: central)
            == .readRequest(central: "01:02:03:04:05:06", request: 9, characteristic: "level", offset: 0))
        #expect(ControlEvent.from(.writeCommand(ConnectionID(1), characteristic: level, value: [1]), database: db, central: central)
            == .written(central: "01:02:03:04:05:06", characteristic: "level", value: [1]))
        #expect(ControlEvent.from(.ready, database: db, central: central) == .ready)
        #expect(ControlEvent.from(.requestTimedOut(id: PendingRequestID(1)), database: db, central: central) == nil)
        // Unknown connection: not forwarded.
        #expect(ControlEvent.from(.mtuExchanged(ConnectionID(2), mtu: 100), database: db, central: central) == nil)
    }

    @Test func statusFields() {
        let s = ControlStatus(advertising: true, address: BluetoothAddress("F0:F0:F0:F0:F0:00") ?? .zero, connections: [
            ControlStatus.Central(address: BluetoothAddress("C0:00:00:00:00:01") ?? .zero, addressType: .random, mtu: 247, security: .medium,
                                  subscriptions: [ControlStatus.Subscription(characteristic: "hr", notify: true, indicate: false)], queue: 3)
        ])
        #expect(ControlReply.ok(s.fields).text(id: nil) == #"{"ok":true,"advertising":true,"address":"F0:F0:F0:F0:F0:00","connections":[{"central":"C0:00:00:00:00:01","address_type":"random","mtu":247,"security":"medium","subscriptions":[{"characteristic":"hr","notify":true,"indicate":false}],"queue":3}]}"#)
        let empty = ControlStatus(advertising: false, address: .zero, connections: [])
        #expect(ControlReply.ok(empty.fields).text(id: nil) == #"{"ok":true,"advertising":false,"address":"00:00:00:00:00:00","connections":[]}"#)
    }

    @Test func disconnectReasonNames() {
        #expect(HCIStatus(rawValue: 0x13).controlName == "remote_user_terminated_connection")
        #expect(HCIStatus(rawValue: 0x08).controlName == "connection_timeout")
    }
}

@Suite("Control line framing")
struct ControlLineFramerTests {
    @Test func splitsAcrossReads() {
        var f = ControlLineFramer(maximumLength: 100)
        #expect(f.push(Array("{\"a\":".utf8)) == [])
        #expect(f.push(Array("1}\n{\"b\"".utf8)) == [.line(Array("{\"a\":1}".utf8))])
        #expect(f.push(Array(":2}\r\n\n\nx\n".utf8)) == [.line(Array("{\"b\":2}".utf8)), .line([0x78])])
        #expect(f.bufferedCount == 0)
    }

    @Test func longLineGivesOneErrorAndIsSkippedToItsNewline() {
        var f = ControlLineFramer(maximumLength: 8)
        #expect(f.push(Array("12345678".utf8)) == [])
        #expect(f.push(Array("9abc".utf8)) == [.tooLong])
        #expect(f.push(Array("defghij".utf8)) == [])
        #expect(f.bufferedCount == 0)
        #expect(f.push(Array("k\nok\n".utf8)) == [.line(Array("ok".utf8))])
        // Exactly the maximum, with CRLF, is fine.
        #expect(f.push(Array("12345678\r\n".utf8)) == [.line(Array("12345678".utf8))])
    }
}
