import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// A program's connection parameter requests on the H4 host: LE Connection Update as
/// peripheral where the controller has the Connection Parameters Request procedure (Vol 4
/// Part E §7.8.18), else, or when the central's controller does not take part, the L2CAP
/// Connection Parameter Update Request (Vol 3 Part A §4.20); answered by LE Connection Update
/// Complete (§7.7.65.3) or the central's refusal.
@Suite struct HostLinkRequestTests {
    /// 15 ms (12 × 1.25), latency 0, 2 s (200 × 10 ms).
    static let lowLatency = LEConnectionParameters(intervalMin: 12, intervalMax: 12, latency: 0, supervisionTimeout: 200)

    static func harness(procedure: Bool) -> HostHarness {
        var c = FakeController()
        if procedure { c.leFeatures.insert(.connectionParametersRequestProcedure) }
        var h = HostHarness(controller: c)
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        h.host.linkReports = []
        return h
    }

    static func request(_ h: inout HostHarness, _ p: LEConnectionParameters = lowLatency) {
        h.take(h.host.call({ host, now in host.requestLink(ConnectionID(0x40), .connectionParameters(p), now: now) }, now: h.now))
    }

    static func updateComplete(status: HCIStatus = .success, interval: UInt16 = 12, timeout: UInt16 = 200) -> HCIEvent {
        .leMeta(.connectionUpdateComplete(status: status, handle: 0x40, connectionInterval: interval, peripheralLatency: 0, supervisionTimeout: timeout))
    }

    var finished: (HostHarness) -> [StackEvent] = { h in
        h.events.filter { if case .linkRequestFinished = $0 { true } else { false } }
    }

    @Test func withTheProcedureLEConnectionUpdateIsSentAndItsCompletionAnswers() {
        var h = Self.harness(procedure: true)
        Self.request(&h)
        // LE Connection Update (0x2013): handle 0x0040, interval 12–12, latency 0, timeout 200, CE 0–0.
        #expect(h.sent.map(\.encoded) == [[0x01, 0x13, 0x20, 0x0E, 0x40, 0x00, 0x0C, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00, 0x00, 0x00, 0x00]])
        #expect(finished(h).isEmpty)  // Command Status is not the answer
        h.deliver(Self.updateComplete())
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .accepted)])
        #expect(h.host.linkReports.last?.link.connectionInterval == 12)
        // A later update the central makes on its own answers nothing.
        h.clearLogs()
        h.deliver(Self.updateComplete(interval: 24))
        #expect(finished(h).isEmpty)
        #expect(h.host.linkReports.last?.link.connectionInterval == 24)
    }

    @Test func aCentralWithoutTheProcedureGetsTheL2CAPRequestAndItsRejectionRefuses() throws {
        var h = Self.harness(procedure: true)
        Self.request(&h)
        h.clearLogs()
        h.deliver(Self.updateComplete(status: .unsupportedRemoteFeature))
        #expect(finished(h).isEmpty)
        // L2CAP Connection Parameter Update Request (code 0x12), length 8: 12, 12, 0, 200.
        let requests = h.sentPayloads(handle: 0x40, channel: .leSignalling)
        try #require(requests.count == 1)
        let request = requests[0]
        #expect(request.count == 12)
        #expect(request[0] == 0x12 && Array(request[2...]) == [0x08, 0x00, 0x0C, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00])
        // Connection Parameter Update Response (0x13), same identifier, result 1: rejected.
        h.receive([0x13, request[1], 0x02, 0x00, 0x01, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .refused("the central rejected the L2CAP Connection Parameter Update Request (result 1)"))])
        #expect(h.warnings.isEmpty)
    }

    @Test func withoutTheProcedureTheL2CAPRequestIsAcceptedThenTheUpdateAnswers() throws {
        var h = Self.harness(procedure: false)
        Self.request(&h)
        #expect(h.sentCommands.isEmpty)
        let requests = h.sentPayloads(handle: 0x40, channel: .leSignalling)
        try #require(requests.count == 1)
        let request = requests[0]
        #expect(request[0] == 0x12)
        // A response for another identifier is not ours; result 0 (accepted) waits for the update.
        h.receive([0x13, request[1] &+ 1, 0x02, 0x00, 0x01, 0x00], channel: .leSignalling, handle: 0x40)
        h.receive([0x13, request[1], 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(finished(h).isEmpty)
        h.deliver(Self.updateComplete())
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .accepted)])
    }

    @Test func theCentralRefusingTheProcedureOrTheControllerRefusingTheCommandRefuses() {
        var h = Self.harness(procedure: true)
        Self.request(&h)
        h.deliver(Self.updateComplete(status: .unacceptableConnectionParameters))
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .refused("the connection update failed: Unacceptable Connection Parameters (0x3B)"))])
        #expect(h.fatals.isEmpty)

        var h2 = Self.harness(procedure: true)
        h2.controller.status[.leConnectionUpdate] = .commandDisallowed
        Self.request(&h2)
        #expect(finished(h2) == [.linkRequestFinished(0x40, .connectionParameters, .refused("the connection update failed: Command Disallowed (0x0C)"))])
        #expect(h2.fatals.isEmpty && h2.warnings.isEmpty)
    }

    @Test func anUnknownConnectionIsRefusedAtOnceAndADisconnectionForgetsTheRequest() {
        var h = Self.harness(procedure: true)
        h.take(h.host.call({ host, now in host.requestLink(ConnectionID(0x41), .connectionParameters(Self.lowLatency), now: now) }, now: h.now))
        #expect(h.host.host.linkProcedures.waiting(.connectionParameters).isEmpty)
        #expect(h.sent.isEmpty)
        Self.request(&h)
        h.disconnected(0x40)
        #expect(h.host.host.linkProcedures.waiting(.connectionParameters).isEmpty)
    }

    // MARK: - PHY

    static func requestPHY(_ h: inout HostHarness, tx: LEPHY, rx: LEPHY, coding: LECodedPHYCoding = .noPreference) {
        h.take(h.host.call({ host, now in host.requestLink(ConnectionID(0x40), .phy(tx: tx, rx: rx, coding: coding), now: now) }, now: h.now))
    }

    @Test func aPHYRequestIsLESetPHYAnsweredByPHYUpdateComplete() {
        var c = FakeController()
        c.leFeatures.insert(.leCodedPHY)
        var h = HostHarness(controller: c)
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        h.host.linkReports = []
        Self.requestPHY(&h, tx: .leCoded, rx: .le2M, coding: .s8)
        // LE Set PHY (0x2032): handle 0x0040, ALL_PHYS 0, TX LE Coded (bit 2), RX LE 2M (bit 1), options S=8.
        #expect(h.sent.map(\.encoded) == [[0x01, 0x32, 0x20, 0x07, 0x40, 0x00, 0x00, 0x04, 0x02, 0x02, 0x00]])
        #expect(finished(h).isEmpty)
        h.deliver(.leMeta(.phyUpdateComplete(status: .success, handle: 0x40, txPHY: 3, rxPHY: 2)))
        #expect(finished(h) == [.linkRequestFinished(0x40, .phy, .accepted)])
        #expect(h.host.linkReports.last?.link.txPHY == .leCoded)
        // Refused by the central: the status says so.
        h.clearLogs()
        Self.requestPHY(&h, tx: .le1M, rx: .le1M)
        h.deliver(.leMeta(.phyUpdateComplete(status: .unsupportedRemoteFeature, handle: 0x40, txPHY: 3, rxPHY: 2)))
        #expect(finished(h) == [.linkRequestFinished(0x40, .phy, .refused("the PHY update failed: Unsupported Remote Feature (0x1A)"))])
    }

    @Test func aPHYTheControllerLacksIsRefusedWithTheReasonBeforeAnythingIsSent() {
        var h = Self.harness(procedure: false)  // LE 2M, no LE Coded
        Self.requestPHY(&h, tx: .leCoded, rx: .leCoded, coding: .s2)
        #expect(h.sent.isEmpty)
        #expect(finished(h) == [.linkRequestFinished(0x40, .phy, .refused("the controller does not support LE Coded (its LE features lack it)"))])
        var c = FakeController()
        c.leFeatures = [.encryption]
        var h2 = HostHarness(controller: c)
        h2.bringUp()
        h2.connect(0x40)
        h2.clearLogs()
        Self.requestPHY(&h2, tx: .le2M, rx: .le1M)
        #expect(h2.sent.isEmpty)
        #expect(finished(h2) == [.linkRequestFinished(0x40, .phy, .refused("the controller does not support LE 2M (its LE features lack it)"))])
    }

    @Test func theControllerRefusingLESetPHYAnswersTheRequest() {
        var h = Self.harness(procedure: false)
        h.controller.status[.leSetPHY] = .commandDisallowed
        Self.requestPHY(&h, tx: .le2M, rx: .le2M)
        #expect(finished(h) == [.linkRequestFinished(0x40, .phy, .refused("the PHY update failed: Command Disallowed (0x0C)"))])
        #expect(h.warnings.isEmpty && h.fatals.isEmpty)
    }

    // MARK: - Data length

    @Test func aDataLengthRequestIsLESetDataLengthAnsweredByItsCommandComplete() {
        var h = Self.harness(procedure: false)
        h.take(h.host.call({ host, now in host.requestLink(ConnectionID(0x40), .dataLength(txOctets: 100), now: now) }, now: h.now))
        // LE Set Data Length (0x2022): handle 0x0040, 100 octets, TxTime 0x4290 (17040 µs, the
        // largest: on LE Coded the LE 1M time, (100 + 14) × 8 µs, would bound it below 100 octets).
        #expect(h.sent.map(\.encoded) == [[0x01, 0x22, 0x20, 0x06, 0x40, 0x00, 0x64, 0x00, 0x90, 0x42]])
        #expect(finished(h) == [.linkRequestFinished(0x40, .dataLength, .accepted)])

        var c = FakeController()
        c.leFeatures = [.encryption, .le2MPHY]
        var h2 = HostHarness(controller: c)
        h2.bringUp()
        h2.connect(0x40)
        h2.clearLogs()
        h2.take(h2.host.call({ host, now in host.requestLink(ConnectionID(0x40), .dataLength(txOctets: 251), now: now) }, now: h2.now))
        #expect(h2.sent.isEmpty)
        #expect(finished(h2) == [.linkRequestFinished(0x40, .dataLength, .refused("the controller does not support LE Data Packet Length Extension (its LE features lack it)"))])
    }

    // MARK: - phy.preferred

    @Test func eachNewLinkIsAskedForTheConfigsPreferredPHYsTheControllerHas() {
        var config = HostConfiguration.test()
        config.advertising.preferredPHYs = [.leCoded, .le2M, .le1M]
        var c = FakeController()
        c.leFeatures.insert(.leCodedPHY)
        var h = HostHarness(configuration: config, controller: c)
        h.bringUp()
        h.connect(0x40)
        // LE Set PHY: TX and RX masks 1M | 2M | Coded (0b111).
        #expect(h.sent.contains(H4Packet(command: .leSetPHY(handle: 0x40, allPHYs: 0, txPHYs: 0b111, rxPHYs: 0b111, phyOptions: 0))))
        // Without LE Coded on the controller: Coded is left out; only 1M left: no LE Set PHY at all.
        config.advertising.preferredPHYs = [.leCoded, .le1M]
        var h2 = HostHarness(configuration: config)
        h2.bringUp()
        h2.connect(0x40)
        #expect(!h2.sentOpcodes.contains(.leSetPHY))
    }

    // MARK: - What the link has, others' updates, Command Reject, cancelling

    static func cancel(_ h: inout HostHarness, _ kind: LinkRequestKind) {
        h.take(h.host.call({ host, now in host.cancelLinkRequest(ConnectionID(0x40), kind, now: now) }, now: h.now))
    }

    /// §7.7.65.3: no LE Connection Update Complete when nothing changes; the link (24, 0, 72)
    /// already gives it, on either way of asking.
    @Test(arguments: [true, false]) func theParametersTheLinkHasAreAcceptedAtOnce(procedure: Bool) {
        var h = Self.harness(procedure: procedure)
        Self.request(&h, LEConnectionParameters(intervalMin: 24, intervalMax: 36, latency: 0, supervisionTimeout: 72))
        #expect(h.sent.isEmpty)
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .accepted)])
        #expect(h.host.host.linkProcedures.waiting(.connectionParameters).isEmpty)
        // The PHYs in use (LE 1M both ways on a new link): nothing to ask either.
        Self.requestPHY(&h, tx: .le1M, rx: .le1M)
        #expect(h.sent.isEmpty)
        #expect(finished(h).last == .linkRequestFinished(0x40, .phy, .accepted))
        // Another timeout is a change: asked for.
        Self.request(&h, LEConnectionParameters(intervalMin: 24, intervalMax: 36, latency: 0, supervisionTimeout: 100))
        #expect(!h.sent.isEmpty)
    }

    /// After our LE Connection Update the update that completes is the central's answer (Vol 6
    /// Part B §5.1.7: the central picks the values): outside what was asked, it refuses the
    /// request and names them. After the L2CAP request, an update outside them may be the
    /// central's own, before its response: the request keeps waiting.
    @Test func anUpdateOutsideWhatWasAskedRefusesAfterLEConnectionUpdateAndWaitsAfterL2CAP() throws {
        var h = Self.harness(procedure: true)
        Self.request(&h)
        // The central chose 30 ms (24 × 1.25) while 15 ms was asked: seen, and the answer.
        h.deliver(Self.updateComplete(interval: 24))
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .refused("the central chose other parameters (interval 30 ms, latency 0, timeout 2000 ms)"))])
        #expect(h.host.linkReports.last?.link.connectionInterval == 24)
        h.clearLogs()
        h.deliver(Self.updateComplete())
        #expect(finished(h).isEmpty)

        var h2 = Self.harness(procedure: false)
        Self.request(&h2)
        let request = try #require(h2.sentPayloads(handle: 0x40, channel: .leSignalling).first)
        h2.receive([0x13, request[1], 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)
        h2.deliver(Self.updateComplete(timeout: 300))
        #expect(finished(h2).isEmpty)
        h2.deliver(Self.updateComplete())
        #expect(finished(h2) == [.linkRequestFinished(0x40, .connectionParameters, .accepted)])
    }

    /// Vol 3 Part A §4.1: a central that does not take the request rejects it, same identifier.
    @Test func aCommandRejectOfTheRequestRefusesIt() throws {
        var h = Self.harness(procedure: false)
        Self.request(&h)
        let request = try #require(h.sentPayloads(handle: 0x40, channel: .leSignalling).first)
        // Command Reject (0x01), another identifier: not ours.
        h.receive([0x01, request[1] &+ 1, 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(finished(h).isEmpty)
        // Command not understood (reason 0x0000), our identifier.
        h.receive([0x01, request[1], 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(finished(h) == [.linkRequestFinished(0x40, .connectionParameters, .refused(
            "the central rejected the command (L2CAP Command Reject of the Connection Parameter Update Request)"))])
        #expect(h.host.host.linkProcedures.waiting(.connectionParameters).isEmpty)
    }

    @Test func aCancelledRequestIsForgottenAndALateAnswerAnswersNothing() {
        var h = Self.harness(procedure: true)
        Self.request(&h)
        Self.requestPHY(&h, tx: .le2M, rx: .le2M)
        Self.cancel(&h, .connectionParameters)
        #expect(h.host.host.linkProcedures.waiting(.connectionParameters).isEmpty)
        #expect(h.host.host.linkProcedures.waiting(.phy) == [0x40])  // another kind stays
        h.deliver(Self.updateComplete())
        #expect(finished(h).isEmpty)
        Self.cancel(&h, .phy)
        h.deliver(.leMeta(.phyUpdateComplete(status: .success, handle: 0x40, txPHY: 2, rxPHY: 2)))
        #expect(finished(h).isEmpty)
        #expect(h.host.linkReports.last?.link.txPHY == .le2M)
    }
}
