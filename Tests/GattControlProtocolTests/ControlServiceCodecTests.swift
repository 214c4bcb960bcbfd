import GattControlProtocol
import GattCore
import Testing

/// The runtime service ops (`add_service`, `remove_service`, `list_services`) and their replies.
@Suite("Control service ops: exact text")
struct ControlServiceCodecTests {
    @Test func requestsEncodeAndDecodeExactly() throws {
        let service = try JSONParser.parse(Array(#"{"id":"heart","uuid":"180D","characteristics":[]}"#.utf8))
        let cases: [(ControlRequest, String)] = [
            (ControlRequest(command: .addService(service: service)),
             #"{"op":"add_service","service":{"id":"heart","uuid":"180D","characteristics":[]}}"#),
            (ControlRequest(id: .rawNumber("2"), command: .removeService(id: "heart")), #"{"op":"remove_service","service":"heart","id":2}"#),
            (ControlRequest(command: .listServices), #"{"op":"list_services"}"#),
        ]
        for (request, line) in cases {
            #expect(request.text == line)
            let decoded = try decode(line)
            #expect(decoded.text == line)
            #expect(decoded.command.op == request.command.op)
        }
    }

    @Test func addServiceNeedsAnObject() {
        #expect(failure(#"{"op":"add_service","service":"heart"}"#)?.error.code == .invalidValue)
        #expect(failure(#"{"op":"add_service"}"#)?.error.code == .missingField)
        #expect(failure(#"{"op":"remove_service","service":1}"#)?.error.code == .invalidValue)
    }

    @Test func servicesReplyRoundTrips() throws {
        let reply = ControlReply.services([
            ControlService(id: "heart", uuid: "180D", start: 55, end: 58, runtime: true),
            ControlService(id: nil, uuid: "5EC0", start: 52, end: 54, runtime: false),
            ControlService(id: "kept", uuid: "5EC1", start: 59, end: 61, runtime: true, restored: true),
            ControlService(id: "battery", uuid: "180F", start: 62, end: 65, runtime: false, profile: "battery"),
        ])
        let line = reply.text(id: nil)
        #expect(line == #"{"ok":true,"services":[{"id":"heart","uuid":"180D","start":55,"end":58,"runtime":true},{"uuid":"5EC0","start":52,"end":54,"runtime":false},{"id":"kept","uuid":"5EC1","start":59,"end":61,"runtime":true,"restored":true},{"id":"battery","uuid":"180F","start":62,"end":65,"runtime":false,"profile":"battery"}]}"#)
        for op in ["list_services", "add_service"] {
            guard case .reply(let decoded, _) = try message(line, answering: op) else {
                Issue.record("not a reply")
                continue
            }
            #expect(decoded == reply)
        }
    }
}
