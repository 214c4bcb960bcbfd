import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Each link's parameters, PHYs and data length as the controller reports them, kept per
/// connection and reported to the core once per change (Vol 4 Part E §7.7.65.3, §7.7.65.7,
/// §7.7.65.12).
@Suite struct HostLinkParametersTests {
    /// What `HostHarness.connect` reports: 30 ms, latency 0, 720 ms; LE 1M, 27 octets each way.
    static let atConnection = LinkParameters(
        connectionInterval: 24, peripheralLatency: 0, supervisionTimeout: 72, txPHY: .le1M, rxPHY: .le1M, maxTxOctets: 27, maxRxOctets: 27)

    @Test func aNewLinkIsReportedWithItsConnectionParametersLE1MAnd27Octets() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        #expect(h.host.linkReports == [LinkReport(handle: 0x40, link: Self.atConnection)])
        #expect(h.host.host.links[0x40] == Self.atConnection)
        #expect(h.host.core.connections[ConnectionID(0x40)]?.link == Self.atConnection)
    }

    @Test func connectionUpdatePHYUpdateAndDataLengthChangeAreReportedOncePerChange() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.host.linkReports = []
        // LE Connection Update Complete: 0x0C × 1.25 = 15 ms, latency 2, 0x00C8 × 10 = 2 s.
        h.deliver(H4Packet(type: .event, body: [0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x0C, 0x00, 0x02, 0x00, 0xC8, 0x00]))
        var link = Self.atConnection
        link.connectionInterval = 12
        link.peripheralLatency = 2
        link.supervisionTimeout = 200
        #expect(h.host.linkReports == [LinkReport(handle: 0x40, link: link)])
        #expect(link.intervalMilliseconds == 15 && link.timeoutMilliseconds == 2000)
        // The same parameters again: nothing changed, nothing reported.
        h.deliver(H4Packet(type: .event, body: [0x3E, 0x0A, 0x03, 0x00, 0x40, 0x00, 0x0C, 0x00, 0x02, 0x00, 0xC8, 0x00]))
        #expect(h.host.linkReports.count == 1)
        // LE PHY Update Complete: TX LE 2M, RX LE Coded.
        h.deliver(H4Packet(type: .event, body: [0x3E, 0x06, 0x0C, 0x00, 0x40, 0x00, 0x02, 0x03]))
        link.txPHY = .le2M
        link.rxPHY = .leCoded
        #expect(h.host.linkReports.last == LinkReport(handle: 0x40, link: link))
        // LE Data Length Change: 251 octets / 2120 µs out, 200 octets / 1712 µs in.
        h.deliver(H4Packet(type: .event, body: [0x3E, 0x0B, 0x07, 0x40, 0x00, 0xFB, 0x00, 0x48, 0x08, 0xC8, 0x00, 0xB0, 0x06]))
        link.maxTxOctets = 251
        link.maxRxOctets = 200
        #expect(h.host.linkReports.last == LinkReport(handle: 0x40, link: link))
        #expect(h.host.linkReports.count == 3)
        #expect(h.host.core.connections[ConnectionID(0x40)]?.link == link)
        #expect(h.warnings.isEmpty)
    }

    @Test func aFailedProcedureIsAWarningAndChangesNothing() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.host.linkReports = []
        h.clearLogs()
        h.deliver(.leMeta(.connectionUpdateComplete(status: .unacceptableConnectionParameters, handle: 0x40, connectionInterval: 6, peripheralLatency: 0, supervisionTimeout: 100)))
        h.deliver(.leMeta(.phyUpdateComplete(status: .unsupportedRemoteFeature, handle: 0x40, txPHY: 2, rxPHY: 2)))
        #expect(h.host.linkReports.isEmpty)
        #expect(h.warnings == [
            "connection 64: connection update failed: Unacceptable Connection Parameters (0x3B)",
            "connection 64: PHY update failed: Unsupported Remote Feature (0x1A)",
        ])
        #expect(h.host.host.links[0x40] == Self.atConnection)
    }

    @Test func eventsForAnUnknownHandleAreIgnoredAndADisconnectionForgetsTheLink() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.host.linkReports = []
        h.clearLogs()
        h.deliver(.leMeta(.dataLengthChange(handle: 0x41, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)))
        h.deliver(.leMeta(.connectionUpdateComplete(status: .unacceptableConnectionParameters, handle: 0x41, connectionInterval: 6, peripheralLatency: 0, supervisionTimeout: 100)))
        #expect(h.host.linkReports.isEmpty)
        #expect(h.warnings.isEmpty)
        h.disconnected(0x40)
        #expect(h.host.host.links.isEmpty)
        h.deliver(.leMeta(.dataLengthChange(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)))
        #expect(h.host.linkReports.isEmpty)
    }

    @Test func descriptionAndMilliseconds() {
        #expect(Self.atConnection.description == "interval 30 ms, latency 0, timeout 720 ms, PHY 1M/1M, data length 27/27 octets")
        #expect(LinkParameters(connectionInterval: 9).description == "interval 11.25 ms")
        #expect(LinkParameters(connectionInterval: 6, txPHY: .le2M).description == "interval 7.5 ms, PHY 2M/?")
        #expect(LinkParameters().description == "parameters unknown")
        // Never traps, whatever a program or a command line gives.
        #expect(LinkParameters.milliseconds(.infinity) == "inf")
        #expect(LinkParameters.milliseconds(.nan) == "nan")
        #expect(LinkParameters.milliseconds(1e300) == "1e+300")
        #expect(LinkParameters.milliseconds(-11.25) == "-11.25")
    }
}
