import GattCore
import Testing

@testable import GattDaemon

@Suite("Control events from ATT server events")
struct ControlEventMappingTests {
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
            == .written(central: "01:02:03:04:05:06", characteristic: "level", value: ControlValue(hex: [1])))
        #expect(ControlEvent.from(.ready, database: db, central: central) == .ready)
        #expect(ControlEvent.from(.requestTimedOut(id: PendingRequestID(1)), database: db, central: central) == nil)
        // Unknown connection: not forwarded.
        #expect(ControlEvent.from(.mtuExchanged(ConnectionID(2), mtu: 100), database: db, central: central) == nil)
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
