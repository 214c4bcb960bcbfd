import GattCore
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import Logging
import Synchronization
import Testing

@testable import GattDaemon

/// The log lines both daemon back ends write (tests and users grep them: keep them stable).
@Suite struct PeripheralEventLogTests {
    /// `body`'s log lines at debug level, in the journal format (no timestamp).
    private func lines(_ body: (PeripheralEventLog) -> Void) -> [String] {
        let lines = Mutex<[String]>([])
        var handler = JournalLogHandler(label: "test", format: .journal) { line in lines.withLock { $0.append(line) } }
        handler.logLevel = .debug
        body(PeripheralEventLog(logger: Logger(label: "test", factory: { _ in handler })))
        return lines.withLock { $0 }
    }

    private let central = BluetoothAddress("C0:00:00:00:00:01") ?? .zero

    @Test func advertisingConnectionsAndShutdown() throws {
        let payloads = try AdvertisingPayloadBuilder.build(AdvertisingConfiguration(), deviceName: "gattd-test")
        let logged = lines { log in
            log.advertising(true, payloads)
            log.advertising(false, payloads)
            log.connected(central, type: "random", handle: 64)
            log.connected(central, type: "public", handle: nil)
            log.disconnected(central, reason: "\(HCIStatus.remoteUserTerminatedConnection)")
            log.stopping(centrals: 2)
            log.restored(persistedValues: 1)
            log.restored(persistedValues: 3)
        }
        #expect(logged == [
            "<6>advertising as \"gattd-test\" (complete local name)\n",
            "<6>advertising stopped\n",
            "<6>connected: C0:00:00:00:00:01 (random), handle 64\n",
            "<6>connected: C0:00:00:00:00:01 (public), handle ?\n",
            "<6>disconnected: C0:00:00:00:00:01, reason Remote User Terminated Connection (0x13)\n",
            "<6>stopping: advertising off, disconnecting 2 central(s)\n",
            "<6>restored 1 persisted value\n",
            "<6>restored 3 persisted values\n",
        ])
    }

    @Test func attPDUsOneLineEachWayAtDebugOnly() {
        let logged = lines { log in
            log.attPDU([0x0A, 0x12, 0x00], sent: false, central: "C0:00:00:00:00:01")
            log.attPDU([0x01, 0x0A, 0x12, 0x00, 0x02], sent: true, central: "C0:00:00:00:00:01")
        }
        #expect(logged == [
            "<7>C0:00:00:00:00:01 → Read Request handle 0x0012\n",
            "<7>C0:00:00:00:00:01 ← Error Response to Read Request handle 0x0012: Read Not Permitted (0x02)\n",
        ])
        // At info level nothing is logged, and nothing is built: not even the central's name.
        let count = Mutex(0)
        var handler = JournalLogHandler(label: "test", format: .journal) { _ in count.withLock { $0 += 1 } }
        handler.logLevel = .info
        let log = PeripheralEventLog(logger: Logger(label: "test", factory: { _ in handler }))
        let asked = Mutex(false)
        log.attPDU([0x0A, 0x12, 0x00], sent: false, central: { asked.withLock { $0 = true }; return "x" }())
        #expect(count.withLock { $0 } == 0)
        #expect(!asked.withLock { $0 })
    }

    @Test func attEventsNameTheCharacteristicOrItsIndex() throws {
        let db = GATTDatabase(deviceName: "T", services: [
            ServiceDefinition(id: "s", uuid: 0x180D, characteristics: [
                CharacteristicDefinition(id: "level", uuid: 0x2A19, properties: [.read, .write, .notify, .indicate], value: [0], maxLength: 4)
            ])
        ])
        let level = try #require(db.characteristicIndex(named: "level"))
        let id = ConnectionID(64)
        let logged = lines { log in
            log.att(.mtuExchanged(id, mtu: 517), database: db)
            log.att(.subscriptionChanged(id, characteristic: level, notify: true, indicate: false), database: db)
            log.att(.subscriptionChanged(id, characteristic: level, notify: false, indicate: true), database: db)
            log.att(.subscriptionChanged(id, characteristic: level, notify: false, indicate: false), database: db)
            log.att(.written(id, characteristic: level, value: [1, 2, 3]), database: db)
            log.att(.written(id, characteristic: CharacteristicIndex(99), value: [1]), database: db)
            log.att(.written(id, characteristic: CharacteristicIndex(-1), value: [1]), database: db)
            log.att(.indicationTimedOut(id, characteristic: level), database: db)
            log.att(.indicationUnconfirmed(id, characteristic: level), database: db)
            log.att(.requestTimedOut(id: PendingRequestID(7)), database: db)
        }
        #expect(logged == [
            "<6>conn#64: MTU 517\n",
            "<6>conn#64: subscribed to level\n",
            "<6>conn#64: subscribed to level (indications)\n",
            "<6>conn#64: unsubscribed from level\n",
            "<6>conn#64: wrote 3 bytes to level\n",
            "<6>conn#64: wrote 1 bytes to #99\n",
            "<6>conn#64: wrote 1 bytes to #-1\n",
            "<4>conn#64: indication of level not confirmed in 30 s; closing its bearer\n",
            "<4>conn#64: indication of level will not be confirmed: its Enhanced ATT bearer closed\n",
            "<4>request req#7 not answered in time; answered Unlikely Error\n",
        ])
    }

    @Test func attEventsNameTheCentralWhenKnown() {
        let db = GATTDatabase(deviceName: "T", services: [])
        let logged = lines { log in
            log.att(.mtuExchanged(ConnectionID(1), mtu: 247), database: db, central: { $0 == ConnectionID(1) ? "C0:DE:00:00:00:01" : nil })
            log.att(.mtuExchanged(ConnectionID(2), mtu: 23), database: db, central: { $0 == ConnectionID(1) ? "C0:DE:00:00:00:01" : nil })
        }
        #expect(logged == ["<6>C0:DE:00:00:00:01: MTU 247\n", "<6>conn#2: MTU 23\n"])
    }

    @Test func retryDelays() {
        #expect(TimeAmount.milliseconds(250).logDescription == "250 ms")
        #expect(TimeAmount.milliseconds(1500).logDescription == "1.5 s")
        #expect(TimeAmount.seconds(10).logDescription == "10.0 s")
        #expect(TimeAmount(Duration.milliseconds(1500)) == .milliseconds(1500))
    }
}
