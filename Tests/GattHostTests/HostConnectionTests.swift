import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Connections as peripheral: events, per-connection commands, advertising
/// while connected (Vol 4 Part E §7.7.65.1, §7.7.65.10, §7.7.5).
@Suite struct HostConnectionTests {
    static let conn = HostConnection(handle: 0x0040, peerAddress: HostHarness.central, peerAddressType: .random)

    static func perConnectionCommands(_ handle: UInt16) -> [H4Packet] {
        [
            H4Packet(command: .leSetDataLength(handle: handle, txOctets: 251, txTime: 2120)),
            H4Packet(command: .leSetPHY(handle: handle, allPHYs: 0, txPHYs: 0b10, rxPHYs: 0b10, phyOptions: 0)),
        ]
    }

    @Test(arguments: [0x01, 0x0A, 0x29] as [UInt8])
    func peripheralConnection(subevent: UInt8) {
        var h = HostHarness()
        h.bringUp()
        let c = HostHarness.connectionComplete(handle: 0x0040)
        let meta: HCILEMetaEvent =
            switch subevent {
            case 0x01: .connectionComplete(c)
            case 0x0A: .enhancedConnectionComplete(c)
            default: .enhancedConnectionCompleteV2(c)
            }
        h.deliver(.leMeta(meta))
        #expect(h.events == [.connected(Self.conn), .advertisingChanged(false), .advertisingChanged(true)])
        #expect(h.sent == Self.perConnectionCommands(0x40) + [H4Packet(command: .leSetAdvertisingEnable(true))])
        // LE Set Data Length for handle 0x0040, spelled out.
        #expect(h.sent.first?.encoded == [0x01, 0x22, 0x20, 0x06, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08])
        #expect(h.sent[1].encoded == [0x01, 0x32, 0x20, 0x07, 0x40, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00])
        #expect(h.host.connections == [0x40: Self.conn])
        #expect(h.host.att.connections == [ConnectionID(0x40)])
        // The ATT bearer answers over the connection.
        h.clearLogs()
        h.receive([0x02, 0x17, 0x00], handle: 0x40)
        #expect(h.sent == [H4Packet(acl: HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: [0x03, 0x00, 0x04, 0x00, 0x03, 0x05, 0x02]))])
        #expect(h.violations.isEmpty)
    }

    @Test func noDataLengthOrPHYWithoutTheFeatures() {
        var c = FakeController()
        c.leFeatures = [.encryption]
        var h = HostHarness(controller: c)
        h.bringUp()
        h.connect(0x40)
        #expect(h.sent == [H4Packet(command: .leSetAdvertisingEnable(true))])

        var config = HostConfiguration.test()
        config.requestDataLengthAndPHY = false
        var h2 = HostHarness(configuration: config)
        h2.bringUp()
        h2.connect(0x40)
        #expect(h2.sent == [H4Packet(command: .leSetAdvertisingEnable(true))])
    }

    @Test func dataLengthAndPHYFailuresAreWarnings() {
        var h = HostHarness()
        h.bringUp()
        h.controller.status[.leSetDataLength] = .unsupportedRemoteFeature
        h.controller.status[.leSetPHY] = .unsupportedRemoteFeature
        h.connect(0x40)
        #expect(h.warnings == ["LE Set Data Length failed: Unsupported Remote Feature (0x1A)", "LE Set PHY failed: Unsupported Remote Feature (0x1A)"])
        #expect(h.fatals.isEmpty)
        #expect(h.host.isAdvertising)
    }

    @Test func advertisingStopsAtMaxConnectionsAndResumesAfterADisconnection() {
        var h = HostHarness(configuration: .test(maxConnections: 2))
        h.bringUp()
        h.connect(0x40)
        #expect(h.sentOpcodes == [.leSetDataLength, .leSetPHY, .leSetAdvertisingEnable])
        #expect(h.host.isAdvertising)
        h.clearLogs()
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        #expect(h.sentOpcodes == [.leSetDataLength, .leSetPHY])  // at the limit: no re-enable
        #expect(!h.host.isAdvertising)
        #expect(h.host.connections.count == 2)
        h.clearLogs()

        h.disconnected(0x40, reason: .remoteUserTerminatedConnection)
        #expect(h.events == [.disconnected(Self.conn, reason: .remoteUserTerminatedConnection), .advertisingChanged(true)])
        #expect(h.sent == [H4Packet(command: .leSetAdvertisingEnable(true))])
        #expect(h.host.att.connections == [ConnectionID(0x41)])
        // A second Disconnection Complete for the same handle changes nothing.
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.events.isEmpty && h.sent.isEmpty)
    }

    @Test func maxConnectionsOneNeverReEnables() {
        var h = HostHarness(configuration: .test(maxConnections: 1))
        h.bringUp()
        h.connect(0x40)
        #expect(h.sentOpcodes == [.leSetDataLength, .leSetPHY])
        #expect(h.events == [.connected(Self.conn), .advertisingChanged(false)])
        h.clearLogs()
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sent.isEmpty)
    }

    @Test func controllerRefusingToAdvertiseWhileConnectedRetriesOnlyAfterADisconnection() {
        var h = HostHarness()
        h.bringUp()
        h.controller.status[.leSetAdvertisingEnable] = .commandDisallowed
        h.connect(0x40)
        #expect(h.sentOpcodes == [.leSetDataLength, .leSetPHY, .leSetAdvertisingEnable])
        #expect(h.warnings == ["the controller refused to advertise while connected (LE Set Advertising Enable: Command Disallowed (0x0C)); advertising resumes after a disconnection"])
        #expect(h.fatals.isEmpty)
        h.clearLogs()
        // No retry on other activity or on the advertise op.
        h.receive([0x02, 0x17, 0x00], handle: 0x40)
        h.completed([(0x40, 1)])
        h.take(h.host.setAdvertising(true, now: h.now))
        h.advance(to: .seconds(10))
        #expect(h.sentCommands.isEmpty)
        h.controller.status = [:]
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.sent == [H4Packet(command: .leSetAdvertisingEnable(true))])
        #expect(h.host.isAdvertising)
    }

    @Test func centralRoleConnectionIsIgnored() {
        var h = HostHarness()
        h.bringUp()
        h.deliver(.leMeta(.connectionComplete(HostHarness.connectionComplete(handle: 0x50, role: .central))))
        #expect(h.events == [.warning("unexpected connection as central (handle 80); ignored")])
        #expect(h.sent.isEmpty)
        #expect(h.host.connections.isEmpty)
        #expect(h.host.isAdvertising)  // a central connection does not end our advertising
        h.clearLogs()
        h.receive([0x02, 0x17, 0x00], handle: 0x50)
        #expect(h.warnings == ["ACL data for unknown connection handle 80 dropped"])
        #expect(h.sent.isEmpty)
    }

    @Test func failedConnectionResumesAdvertising() {
        var h = HostHarness()
        h.bringUp()
        h.deliver(.leMeta(.connectionComplete(HostHarness.connectionComplete(handle: 0, status: .advertisingTimeout))))
        // The attempt ended advertising (off), and it resumes (on).
        #expect(h.events == [.warning("connection attempt failed: Advertising Timeout (0x3C)"), .advertisingChanged(false), .advertisingChanged(true)])
        #expect(h.sent == [H4Packet(command: .leSetAdvertisingEnable(true))])
        #expect(h.host.connections.isEmpty)
    }

    @Test func duplicateConnectionCompleteIsIgnored() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        // One read answer takes both credits: 2 packets in flight on 0x40.
        h.receive([0x02, 0x00, 0x02], handle: 0x40)
        h.receive([0x0A, 0x1B, 0x00], handle: 0x40)
        #expect(h.sentACL.count == 2)
        h.clearLogs()
        h.connect(0x40, peer: BluetoothAddress("11:22:33:44:55:99")!)
        #expect(h.warnings == ["LE Connection Complete for connection handle 64, which is already connected; ignored"])
        #expect(h.host.connections[0x40]?.peerAddress == HostHarness.central)
        #expect(h.sent.isEmpty)
        // Credits in flight are still accounted: NOCP releases the rest of the response.
        h.completed([(0x40, 2)])
        #expect(h.sentACL.count == 2)
    }

    @Test func encryptionChangeRaisesTheBearerSecurity() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        // The secure characteristic (0x0015) needs encryption.
        h.receive([0x0A, 0x17, 0x00], handle: 0x40)
        #expect(h.sentPayloads(handle: 0x40) == [[0x01, 0x0A, 0x17, 0x00, 0x0F]])
        h.deliver(.encryptionChange(status: .success, handle: 0x40, enabled: 1))
        #expect(h.host.connections[0x40]?.security == .medium)
        h.clearLogs()
        h.completed([(0x40, 1)])
        h.receive([0x0A, 0x17, 0x00], handle: 0x40)
        #expect(h.sentPayloads(handle: 0x40) == [[0x0B, 0x55]])
    }
}
