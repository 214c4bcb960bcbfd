import GattControlProtocol
import GattCore
import Testing

@Suite("Control requests: the notify fast path")
struct ControlRequestFastPathTests {
    /// Lines the fast path takes: each decodes exactly as the general decoder reads it.
    @Test(arguments: [
        #"{"op":"notify","characteristic":"stream","value":{"hex":"2a0000000102"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"00FFaB"},"id":1}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":""},"id":"x-1"}"#,
        #"{"id":-9223372036854775808,"value":{"hex":"01"},"characteristic":"2A37","op":"notify"}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"central":"11:22:33:44:55:66","id":0}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":-0}"#,
        #"  { "op" : "notify" , "characteristic" : "a b" , "value" : { "hex" : "0102" } , "id" : 9223372036854775807 }  "#,
        "{\t\"op\":\"notify\",\"characteristic\":\"x\",\"value\":{\"hex\":\"01\"}}\r",
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":true,"id":2}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait" : false}"#,
    ])
    func agreesWithTheGeneralDecoder(_ line: String) throws {
        let fast = try #require(ControlRequest.decodeNotify(Array(line.utf8)))
        #expect(fast == (try ControlRequest.decode(Array(line.utf8))))
        guard case .notify(_, let value, _, _) = fast.command else { Issue.record("not a notify: \(fast)"); return }
        #expect(value.bytes == (try AttributeValueLiteral.decodeHex(value.text)))
    }

    /// Everything else goes to the general decoder (nil here), which gives the reply: other
    /// ops, other encodings, escapes, non-ASCII, separators, odd or bad hex, duplicates,
    /// unknown members, ids it would reject or rewrite, malformed JSON.
    @Test(arguments: [
        #"{"op":"set","characteristic":"hr","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"utf8":"01"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"base64":"AQ=="}}"#,
        #"{"op":"notify","characteristic":"h\"r","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"h\u0072","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"hé","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"00 48"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"012"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"0g"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01","utf8":"a"}}"#,
        #"{"op":"notify","characteristic":"hr","characteristic":"hr","value":{"hex":"01"}}"#,
        #"{"op":"notify","op":"notify","characteristic":"hr","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"extra":1}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"central":null}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":1}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":"true"}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":truex}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"wait":true,"wait":true}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":1.5}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":1e3}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":01}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":9223372036854775808}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":"0123456789012345678901234567890123456789012345678901234567890123456789"}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},"id":null}"#,
        #"{"op":"notify","characteristic":"hr"}"#,
        #"{"op":"notify","value":{"hex":"01"}}"#,
        #"{"characteristic":"hr","value":{"hex":"01"}}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"}} x"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"},}"#,
        #"{"op":"notify","characteristic":"hr","value":{"hex":"01"}"#,
        #"{"op":"notify","characteristic":"hr","value":"01"}"#,
        #"[]"#,
        "",
    ])
    func declines(_ line: String) {
        #expect(ControlRequest.decodeNotify(Array(line.utf8)) == nil)
    }

    /// Every prefix of an accepted line is declined or agrees (no crash, no partial read).
    @Test func prefixes() throws {
        let line = Array(#"{"op":"notify","characteristic":"stream","value":{"hex":"2a00"},"id":"abc"}"#.utf8)
        for n in 0...line.count {
            let prefix = Array(line[..<n])
            if let fast = ControlRequest.decodeNotify(prefix) {
                #expect(fast == (try ControlRequest.decode(prefix)))
            }
        }
        #expect(ControlRequest.decodeNotify(line) != nil)
    }
}
