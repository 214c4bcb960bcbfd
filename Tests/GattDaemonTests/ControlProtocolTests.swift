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
        let level = db.characteristicIndex(named: "level") ?? CharacteristicIndex(-1)
        let central: (ConnectionID) -> String? = { $0.rawValue == 1 ? "01:02:03:04:05:06" : nil }
        #expect(ControlEvent.from(.subscriptionChanged(ConnectionID(1), characteristic: level, notify: true, indicate: false), database: db, central: central)
            == .subscription(central: "01:02:03:04:05:06", characteristic: "level", notify: true, indicate: false))
        #expect(ControlEvent.from(.deferredAccess(id: PendingRequestID(9), ConnectionID(1), .read(characteristic: level, offset: 0)), database: db, central: central)
            == .readRequest(central: "01:02:03:04:05:06", request: 9, characteristic: "level", offset: 0))
        #expect(ControlEvent.from(.deferredAccess(id: PendingRequestID(10), ConnectionID(1), .write(characteristic: level, value: [7], offset: 2)), database: db, central: central)
            == .writeRequest(central: "01:02:03:04:05:06", request: 10, characteristic: "level", offset: 2, value: ControlValue(hex: [7])))
        // Commits are the daemon's to answer: not forwarded.
        let commit = DeferredAccess.commit(values: [PersistedValue(characteristic: level, value: [1])], clientState: nil)
        #expect(ControlEvent.from(.deferredAccess(id: PendingRequestID(11), ConnectionID(1), commit), database: db, central: central) == nil)
        #expect(ControlEvent.from(.writeCommand(ConnectionID(1), characteristic: level, value: [1]), database: db, central: central)
            == .written(central: "01:02:03:04:05:06", characteristic: "level", value: ControlValue(hex: [1])))
        #expect(ControlEvent.from(.ready, database: db, central: central) == .ready)
        #expect(ControlEvent.from(.requestTimedOut(id: PendingRequestID(1)), database: db, central: central) == nil)
        // An indication that will not be confirmed: its Enhanced bearer closed, or it timed out.
        #expect(ControlEvent.from(.indicationUnconfirmed(ConnectionID(1), characteristic: level), database: db, central: central)
            == .unconfirmed(central: "01:02:03:04:05:06", characteristic: "level", reason: "bearer_closed"))
        #expect(ControlEvent.from(.indicationTimedOut(ConnectionID(1), characteristic: level), database: db, central: central)
            == .unconfirmed(central: "01:02:03:04:05:06", characteristic: "level", reason: "timeout"))
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

    /// The run-scanning framer gives exactly what the byte-at-a-time rule gives, however the
    /// stream is cut into reads.
    @Test func agreesWithTheByteAtATimeRuleOnRandomStreams() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let maximum = Int.random(in: 1...12, using: &rng)
            let alphabet: [UInt8] = [0x0A, 0x0D, 0x61, 0x62, 0x63, 0x64]
            let stream = (0..<Int.random(in: 0...200, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            var framer = ControlLineFramer(maximumLength: maximum)
            var got: [ControlLineFramer.Output] = []
            var rest = stream[...]
            while !rest.isEmpty {
                let n = Int.random(in: 1...max(1, rest.count), using: &rng)
                got += framer.push(Array(rest.prefix(n)))
                rest = rest.dropFirst(n)
            }
            #expect(got == Self.byteAtATime(stream, maximum: maximum), "max \(maximum), stream \(stream)")
        }
    }

    /// The reference: one byte at a time (the framer's rule as first written).
    static func byteAtATime(_ bytes: [UInt8], maximum: Int) -> [ControlLineFramer.Output] {
        var out: [ControlLineFramer.Output] = []
        var buffer: [UInt8] = []
        var discarding = false
        for b in bytes {
            if b == 0x0A {
                if discarding {
                    discarding = false
                } else {
                    if buffer.last == 0x0D { buffer.removeLast() }
                    if !buffer.isEmpty { out.append(.line(buffer)) }
                }
                buffer = []
                continue
            }
            if discarding { continue }
            buffer.append(b)
            if buffer.count > maximum + 1 || (buffer.count == maximum + 1 && b != 0x0D) {
                out.append(.tooLong)
                discarding = true
                buffer = []
            }
        }
        return out
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
