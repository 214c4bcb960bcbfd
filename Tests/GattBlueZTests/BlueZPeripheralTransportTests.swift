import Dispatch
import GattBlueZ
import GattCore
import GattDBus
import GattTransport
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The BlueZ transport's shell against a stand-in bluetoothd on a private bus: what it
/// registers (the tree at gattd's handles, 0x0100 higher where bluetoothd's own hold them;
/// the advertisement; the agent), and how bluetoothd's calls become transport events and
/// the core's answers become replies. (The kernel VM runs it against Debian's bluetoothd.)
@Suite struct BlueZPeripheralTransportTests {
    /// The transport's events, waited for as they come.
    final class Events: @unchecked Sendable {
        private let list = Mutex<[TransportEvent]>([])
        private let arrived = DispatchSemaphore(value: 0)
        func append(_ e: TransportEvent) {
            list.withLock { $0.append(e) }
            arrived.signal()
        }
        /// The first event (not taken yet) that `match` picks, waiting for it up to 10 s.
        func next<T>(_ match: (TransportEvent) -> T?) -> T? {
            let deadline = DispatchTime.now() + .seconds(10)
            while true {
                let found: T? = list.withLock { l in
                    for (i, e) in l.enumerated() { if let t = match(e) { l.remove(at: i); return t } }
                    return nil
                }
                if let found { return found }
                if arrived.wait(timeout: deadline) == .timedOut { return nil }
            }
        }
    }

    /// A transport on its own event loop, opened against `bus` (its events recorded);
    /// `stop` closes it, then the loop.
    struct Running {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop: any EventLoop
        let events = Events()
        let transport: BlueZPeripheralTransport

        init(_ bus: PrivateBus) throws {
            loop = group.next()
            var security = SecurityManagerConfiguration()
            security.ioCapability = .displayYesNo
            let t = BlueZPeripheralTransport(index: 0, security: security, bus: .address(bus.address), eventLoop: loop, logger: Logger(label: "test"))
            let events = self.events
            try loop.submit { t.onEvent = { events.append($0) } }.wait()
            t.serveDatabase(BlueZGattApplicationTests.database)
            try t.open().wait()
            transport = t
        }

        func stop() {
            _ = try? transport.close().wait()
            try? group.syncShutdownGracefully()
        }
    }

    @Test func registersAndServesThroughBluetoothd() throws {
        let bus = try PrivateBus()
        let bz = try StandInBluetoothd(bus: bus)
        let running = try Running(bus)
        defer { running.stop() }
        let (t, loop, events) = (running.transport, running.loop, running.events)

        let ready = events.next { if case .ready(let a, _, let c) = $0 { (a, c) } else { nil } }
        #expect(ready?.0.description == "00:AA:01:00:00:00")
        #expect(ready?.1?.limits.numberOfSets == 4)
        // The stand-in holds handles below 0x0015: the tree asks 0x0100 higher, once.
        let db = BlueZGattApplicationTests.database
        let battery = db.services[2]
        let tree = bz.record.withLock { $0.application }
        let service = tree["/org/gattd/app/service" + String(format: "%04x", battery.handle.rawValue)]?.dictionary?["org.bluez.GattService1"]?.dictionary
        #expect(service?["Handle"]?.integer == Int(battery.handle.rawValue) + 0x0100)
        #expect(bz.record.withLock { $0.registrations } == 1)
        #expect(bz.defaultAgentRequested.wait() == "/org/gattd/agent")
        #expect(bz.record.withLock { $0.agent?.capability } == "DisplayYesNo")

        // An advertising set, registered and on.
        var advertising = AdvertisingConfiguration()
        advertising.localName = "stand-in"
        let set = try AdvertisingSetConfiguration(id: AdvertisingSet.primaryID, path: AdvertisingSet.primaryPath, advertising: advertising).build()
        _ = t.setAdvertising([set], now: .zero)
        let advertised = try #require(bz.advertisementRegistered.wait())
        #expect(bz.record.withLock { $0.advertisements[advertised]?["LocalName"] } == .string("stand-in"))
        #expect(events.next { if case .advertisingChanged(true, let s) = $0 { s } else { nil } } == AdvertisingSet.primaryID)

        // The central connects; bluetoothd reads, writes and subscribes for it.
        bz.connected(true)
        let (id, peer) = try #require(events.next { if case .connected(let id, let p) = $0 { (id, p) } else { nil } })
        #expect(peer.address.description == "11:22:33:44:55:66" && peer.addressType == .random)
        let level = try #require(bz.path(of: 0x2A19))
        let options: DBusValue = .properties(["device": .objectPath(StandInBluetoothd.device), "offset": .uint16(0), "mtu": .uint16(185)])
        let read = bz.callApplication(path: level, interface: BlueZGattApplication.characteristicInterface, member: "ReadValue", [options])
        let access = try #require(events.next { if case .gattAccess(id, let a, .read(_, 0)) = $0 { a } else { nil } })
        loop.execute { _ = t.answerGATT(access, .success([57]), now: .zero) }
        #expect(read.wait() == .success([.bytes([57])]))
        let write = bz.callApplication(
            path: level, interface: BlueZGattApplication.characteristicInterface, member: "WriteValue",
            [.bytes([1]), .properties(["device": .objectPath(StandInBluetoothd.device), "type": .string("request")])])
        let written = try #require(events.next { if case .gattAccess(id, let a, .write(_, [1], 0, true)) = $0 { a } else { nil } })
        loop.execute { _ = t.answerGATT(written, .failure(.writeNotPermitted), now: .zero) }
        guard case .failure(let e)? = write.wait() else { Issue.record("the write was not refused"); return }
        #expect(e.name == "org.bluez.Error.NotPermitted")
        _ = bz.callApplication(path: level, interface: BlueZGattApplication.characteristicInterface, member: "StartNotify", []).wait()
        #expect(events.next { if case .gattSubscribers(let h, true) = $0 { h } else { nil } } == db[db.services[2].characteristics[0]].valueHandle)
        // An indication confirmed (bluetoothd names no device): the one central connected.
        _ = bz.callApplication(path: level, interface: BlueZGattApplication.characteristicInterface, member: "Confirm", []).wait()
        #expect(events.next { if case .gattConfirmed(let c, let h) = $0 { (c, h) } else { nil } }.map { $0 == id && $1 == db[db.services[2].characteristics[0]].valueHandle } == true)

        // Pairing: a numeric comparison is the core's prompt, the user's answer the reply.
        let confirmation = bz.callApplication(path: "/org/gattd/agent", interface: "org.bluez.Agent1", member: "RequestConfirmation", [.objectPath(StandInBluetoothd.device), .uint32(123_456)])
        let compared: UInt32? = events.next { if case .pairing(id, .numericComparison(let n)) = $0 { n } else { nil } }
        #expect(compared == 123_456)
        loop.execute { _ = t.respondToPairing(id, .confirm(true), now: .zero) }
        #expect(confirmation.wait() == .success([]))
        // bluetoothd keeps the bond: the core hears of it, as the agent saw it paired.
        bz.bonded()
        let bond = try #require(events.next { if case .pairing(id, .pairingComplete(let b, true)) = $0 { b } else { nil } })
        #expect(bond.address.description == "11:22:33:44:55:66" && bond.authenticated && bond.secureConnections)
        // gattctl unbond: bluetoothd removes the device and its keys.
        t.removeBond(bond)
        #expect(bz.deviceRemoved.wait() == StandInBluetoothd.device)
        // Another adapter's device is not gattd's to pair.
        let other = bz.callApplication(path: "/org/gattd/agent", interface: "org.bluez.Agent1", member: "RequestAuthorization", [.objectPath("/org/bluez/hci1/dev_AA_BB_CC_DD_EE_FF")])
        #expect((try? other.wait()?.get()) == nil)

        // gattctl disconnect: Device1.Disconnect, then the device says it is gone.
        _ = t.disconnect(id, reason: .remoteUserTerminatedConnection, now: .zero)
        #expect(events.next { if case .disconnected(id, _, _) = $0 { true } else { nil } } == true)
        #expect(bz.record.withLock { $0.disconnected } == [StandInBluetoothd.device])
    }

    @Test func aDeviceThatGoesWhileAReadWaitsIsAnsweredNotLeftWaiting() throws {
        let bus = try PrivateBus()
        let bz = try StandInBluetoothd(bus: bus)
        let running = try Running(bus)
        defer { running.stop() }
        let (t, loop, events) = (running.transport, running.loop, running.events)
        #expect(events.next { if case .ready = $0 { true } else { nil } } == true)
        bz.connected(true)
        let id = try #require(events.next { if case .connected(let id, _) = $0 { id } else { nil } })
        let level = try #require(bz.path(of: 0x2A19))
        // A read the core hands to a control client, which has not answered yet...
        let read = bz.callApplication(
            path: level, interface: BlueZGattApplication.characteristicInterface, member: "ReadValue",
            [.properties(["device": .objectPath(StandInBluetoothd.device)])])
        let access = try #require(events.next { if case .gattAccess(id, let a, .read) = $0 { a } else { nil } })
        // ...when the device goes: the core hears it, and its answer (Unlikely Error, as the
        // ATT server answers what a leaving central left waiting) still reaches bluetoothd.
        bz.deviceGone()
        #expect(events.next { if case .disconnected(id, _, _) = $0 { true } else { nil } } == true)
        loop.execute { _ = t.answerGATT(access, .failure(.unlikelyError), now: .zero) }
        guard case .failure(let e)? = read.wait() else { Issue.record("the read was not answered"); return }
        #expect(e.name == "org.gattd.Error.unlikely_error")
    }

    @Test func bluetoothdLeavingIsALostController() throws {
        let bus = try PrivateBus()
        var bz: StandInBluetoothd? = try StandInBluetoothd(bus: bus)
        let running = try Running(bus)
        defer { running.stop() }
        let (t, events) = (running.transport, running.events)
        #expect(events.next { if case .ready = $0 { true } else { nil } } == true)
        bz = nil  // its connection closes: org.bluez has no owner any more
        #expect(bz == nil)
        #expect(events.next { if case .lost(let reason) = $0 { reason } else { nil } } == "bluetoothd left the system bus")
        // Opening again without bluetoothd says so, to be retried with backoff.
        #expect(throws: TransportOpenFailure.self) { try t.open().wait() }
    }

    /// A transport opening against `bus`: the failure its open ends with (nil: it opened).
    private func openFailure(_ bus: PrivateBus, while act: () -> Void = {}) throws -> TransportOpenFailure? {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let t = BlueZPeripheralTransport(index: 0, bus: .address(bus.address), eventLoop: group.next(), logger: Logger(label: "test"))
        t.serveDatabase(BlueZGattApplicationTests.database)
        let opened = t.open()
        act()
        defer { _ = try? t.close().wait() }
        do {
            try opened.wait()
            return nil
        } catch let failure as TransportOpenFailure {
            return failure
        }
    }

    @Test func aBluetoothdWithoutAGATTManagerIsRefusedForGood() throws {
        let bus = try PrivateBus()
        let bz = try StandInBluetoothd(bus: bus, gattManager: false)
        let failure = try #require(try openFailure(bus))
        #expect(failure.message == "bluetoothd serves no GATT applications on hci0 (no GattManager1)")
        #expect(failure.retry == .never(exitCode: 69))
        #expect(bz.record.withLock { $0.registrations } == 0)
    }

    @Test func anApplicationBluetoothdRefusesEverywhereFailsTheOpen() throws {
        let bus = try PrivateBus()
        let bz = try StandInBluetoothd(bus: bus, registration: .refused)
        let failure = try #require(try openFailure(bus))
        #expect(failure.message.hasPrefix("bluetoothd refused gattd's GATT application: "))
        #expect(failure.retry == .withBackoff)
        // gattd's handles, 0x0100 and 0x0200 higher, then bluetoothd's own placement.
        #expect(bz.record.withLock { $0.registrations } == 4)
    }

    @Test func bluetoothdStoppingMidRegistrationIsRetried() throws {
        let bus = try PrivateBus()
        var bz: StandInBluetoothd? = try StandInBluetoothd(bus: bus, registration: .unanswered)
        let registering = try #require(bz?.registering)
        let failure = try #require(try openFailure(bus) {
            #expect(registering.wait() != nil)
            bz = nil  // it leaves the bus before answering
        })
        #expect(bz == nil)
        #expect(failure.retry == .withBackoff)
        #expect(failure.message == "bluetoothd left the system bus" || failure.message.hasPrefix("bluetoothd refused gattd's GATT application"))
    }
}
