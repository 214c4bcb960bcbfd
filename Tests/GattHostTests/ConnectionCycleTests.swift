import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Issue #12: 1,000 connect/disconnect cycles leave no per-connection state behind in the host
/// (connections, ACL reassembly, flow control, Security Managers), the peripheral core
/// (connection table) or the ATT server (bearers, pending deferred accesses, busy set), so the
/// daemon's memory cannot grow with the number of connections it has served.
@Suite struct ConnectionCycleTests {
    static let cycles = 1_000

    /// Each cycle leaves state a sloppy close would forget: a different handle, an MTU
    /// exchange, a subscription, queued notifications, packets in flight, a pending read of a
    /// control characteristic, half of a fragmented frame and a Security Manager (Pairing Request).
    @Test func connectDisconnectCyclesLeaveNoPerConnectionState() {
        var configuration = HostConfiguration.test()
        configuration.security = SecurityManagerConfiguration()
        var h = HostHarness(configuration: configuration)
        h.bringUp()
        h.host.setDeferredAccessAvailable(true)
        for cycle in 0..<Self.cycles {
            let handle = UInt16(0x0001 + cycle % 0x0EFF)
            h.connect(handle)
            h.receive([0x02, 0xF7, 0x00], handle: handle)  // Exchange MTU Request, 247
            h.receive([0x12, 0x15, 0x00, 0x01, 0x00], handle: handle)  // subscribe to c6
            h.receive([0x01, 0x03, 0x00, 0x01, 0x10, 0x00, 0x07, 0x07], channel: .smp, handle: handle)  // Pairing Request
            for i in 0..<40 { _ = h.host.notify(characteristic: ATTFixture.notify, value: [UInt8(i)], now: h.now) }
            h.receive([0x0A, 0x1F, 0x00], handle: handle)  // Read Request: control characteristic, pending
            // The first fragment of a 30-byte frame; its continuation never comes.
            h.deliver(acl: HCIACLPacket(handle: handle, packetBoundary: .firstFlushable, data: hostLE16(30) + hostLE16(0x0004) + [0x52]))
            // The state the close must drop is there.
            #expect(h.host.connections[handle] != nil && h.host.host.security.responders[handle] != nil)
            #expect(h.host.att.bearers.pendingRequests.count == 1 && h.host.att.bearers.busyConnections.count == 1)
            h.disconnected(handle)
        }
        #expect(h.fatals.isEmpty)
        #expect(h.host.host.connections.count == 0)
        #expect(h.host.host.linkTable.reassemblers.count == 0)
        #expect(h.host.host.security.responders.count == 0)
        #expect(h.host.host.acl.inFlight.count == 0)
        #expect(h.host.host.aclInvariantViolations.isEmpty)
        #expect(h.host.core.connections.count == 0)
        #expect(h.host.att.bearers.count == 0)
        #expect(h.host.att.bearers.pendingRequests.count == 0)
        #expect(h.host.att.bearers.busyConnections.count == 0)
        #expect(h.host.isAdvertising)
    }

    /// The same through the peripheral core alone (the kernel transport's path): connection
    /// IDs never reused, each with a subscription, queued notifications and a pending request.
    @Test func peripheralCoreForgetsEveryClosedConnection() {
        var core = Peripheral(database: ATTFixture.database(), payloads: PeripheralFixture.payloads, maxConnections: 1)
        _ = core.setDeferredAccessAvailable(true, now: .zero)
        _ = core.handle(.ready(address: PeripheralFixture.address, description: "test"), now: .zero)
        _ = core.handle(.advertisingChanged(true), now: .zero)
        for cycle in 0..<Self.cycles {
            let id = ConnectionID(UInt16(cycle + 1))
            let peer = TransportPeer(address: PeripheralFixture.centralA.address, addressType: .random, handle: UInt16(cycle % 0x0EFF + 1))
            _ = core.handle(.advertisingChanged(false), now: .zero)
            _ = core.handle(.connected(id, peer), now: .zero)
            _ = core.handle(.received(.fixed(id), PeripheralFixture.subscribe), now: .zero)
            _ = core.handle(.readyToSend(.fixed(id)), now: .zero)
            for i in 0..<40 { _ = core.notify(characteristic: ATTFixture.notify, value: [UInt8(i)], now: .zero) }
            _ = core.handle(.received(.fixed(id), [0x0A, 0x1F, 0x00]), now: .zero)  // control read: pending
            #expect(core.connections.count == 1 && core.att.bearers.count == 1)
            #expect(core.att.bearers.pendingRequests.count == 1 && core.att.bearers.busyConnections.count == 1)
            _ = core.handle(.disconnected(id, reason: .remoteUserTerminatedConnection), now: .zero)
            _ = core.handle(.advertisingChanged(true), now: .zero)
        }
        #expect(core.connections.count == 0)
        #expect(core.att.bearers.count == 0)
        #expect(core.att.bearers.pendingRequests.count == 0)
        #expect(core.att.bearers.busyConnections.count == 0)
        #expect(core.isAdvertising)
    }
}
