import GattControlProtocol
import GattCore
import Testing

private let a = "01:02:03:04:05:06"

/// The pairing part of the protocol, as literal JSON: events watchers see,
/// `pairing_respond`, `bonds`, `unbond`.
@Suite("Control protocol: pairing and bonds")
struct ControlPairingCodecTests {
    @Test func pairingEventsFromTheSecurityManager() throws {
        func text(_ e: SecurityManagerEvent) -> String { ControlEvent.pairing(central: a, ControlPairingEvent(e)).text }
        let bond = Bond(address: BluetoothAddress("C0:00:00:00:00:01")!, addressType: .random, longTermKey: nil, keySize: 16, authenticated: true, secureConnections: true)
        let cases: [(SecurityManagerEvent, String)] = [
            (.pairingRequest(method: .passkeyDisplay, peerIOCapability: .keyboardOnly),
             #"{"event":"pairing_request","central":"01:02:03:04:05:06","method":"passkey_entry_display","io_capability":"keyboard_only"}"#),
            (.pairingRequest(method: .justWorks, peerIOCapability: .noInputNoOutput),
             #"{"event":"pairing_request","central":"01:02:03:04:05:06","method":"just_works","io_capability":"no_input_no_output"}"#),
            (.displayPasskey(42), #"{"event":"passkey_display","central":"01:02:03:04:05:06","passkey":"000042"}"#),
            (.numericComparison(123_456), #"{"event":"numeric_comparison","central":"01:02:03:04:05:06","value":"123456"}"#),
            (.passkeyRequest, #"{"event":"passkey_request","central":"01:02:03:04:05:06"}"#),
            (.pairingFailed(.dhKeyCheckFailed, remote: false),
             #"{"event":"pairing_failed","central":"01:02:03:04:05:06","reason":"dhkey_check_failed","by_central":false}"#),
            (.pairingFailed(.authenticationRequirements, remote: true),
             #"{"event":"pairing_failed","central":"01:02:03:04:05:06","reason":"authentication_requirements","by_central":true}"#),
            (.timedOut, #"{"event":"pairing_timeout","central":"01:02:03:04:05:06"}"#),
            (.pairingComplete(bond, bonded: true),
             #"{"event":"paired","central":"01:02:03:04:05:06","identity":"C0:00:00:00:00:01","bonded":true,"authenticated":true,"secure_connections":true,"key_size":16}"#),
        ]
        for (e, line) in cases {
            #expect(text(e) == line)
            // Decoded back to the same event.
            #expect(try message(line, answering: "watch") == .event(.pairing(central: a, ControlPairingEvent(e))))
        }
    }

    @Test func pairingRespondBondsUnbondRequests() throws {
        let cases: [(String, ControlCommand)] = [
            (#"{"op":"pairing_respond","central":"01:02:03:04:05:06","passkey":123456}"#,
             .pairingRespond(central: a, answer: ControlPairingAnswer(passkey: 123_456))),
            (#"{"op":"pairing_respond","central":"01:02:03:04:05:06","accept":false}"#,
             .pairingRespond(central: a, answer: ControlPairingAnswer(accept: false))),
            (#"{"op":"pairing_respond","confirm":true}"#, .pairingRespond(central: nil, answer: ControlPairingAnswer(confirm: true))),
            (#"{"op":"bonds"}"#, .bonds),
            (#"{"op":"unbond","central":"01:02:03:04:05:06"}"#, .unbond(central: a)),
        ]
        for (line, command) in cases {
            #expect(try decode(line).command == command)
            #expect(ControlRequest(command: command).text == line)
        }
    }

    @Test func badPairingAnswers() {
        func error(_ line: String) -> String? {
            do {
                _ = try decode(line)
                return nil
            } catch {
                return "\(error.error.code.rawValue): \(error.error.message)"
            }
        }
        #expect(error(#"{"op":"pairing_respond","central":"A"}"#) == #"missing_field: missing "accept", "passkey" or "confirm""#)
        #expect(error(#"{"op":"pairing_respond","passkey":1000000}"#) == #"invalid_value: "passkey" must be 0 to 999999, got 1000000"#)
        #expect(error(#"{"op":"pairing_respond","accept":"yes"}"#) == #"invalid_value: "accept" must be true or false, got a string"#)
        #expect(error(#"{"op":"unbond"}"#) == #"missing_field: missing "central""#)
    }

    @Test func bondsReply() throws {
        let line = #"{"ok":true,"bonds":[{"central":"01:02:03:04:05:06","address_type":"public","authenticated":false,"secure_connections":true,"key_size":16,"irk":true,"created":1790000000}]}"#
        let bond = ControlBond(central: BluetoothAddress(a)!, addressType: .public, authenticated: false, secureConnections: true, keySize: 16, irk: true, created: 1_790_000_000)
        #expect(ControlReply.bonds([bond]).text(id: nil) == line)
        #expect(try message(line, answering: "bonds") == .reply(.bonds([bond]), id: nil))
        #expect(ControlReply.bonds([]).text(id: nil) == #"{"ok":true,"bonds":[]}"#)
        var seen = bond
        seen.lastSeen = 1_790_000_500
        let seenLine = #"{"ok":true,"bonds":[{"central":"01:02:03:04:05:06","address_type":"public","authenticated":false,"secure_connections":true,"key_size":16,"irk":true,"created":1790000000,"last_seen":1790000500}]}"#
        #expect(ControlReply.bonds([seen]).text(id: nil) == seenLine)
        #expect(try message(seenLine, answering: "bonds") == .reply(.bonds([seen]), id: nil))
    }
}
