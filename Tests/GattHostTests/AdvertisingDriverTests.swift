import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The advertising commands both transports send, batch by batch.
@Suite struct AdvertisingDriverTests {
    static let p = PeripheralFixture.payloads
    static var q: AdvertisingPayloads {
        var q = p
        q.advertisingData = [0x02, 0x01, 0x04]
        return q
    }
    static let enable = AdvertisingPayloads.enableCommand, disable = AdvertisingPayloads.disableCommand

    @Test func firstEnableConfiguresThenLaterOnesOnlyEnable() {
        var d = AdvertisingDriver()
        #expect(d.setDesired(Self.p)?.commands == Self.p.configurationCommands + [Self.enable])
        #expect(d.setDesired(Self.p) == nil)  // running
        let (events, next) = d.batchFinished(failure: nil, connected: false)
        #expect(events == [.advertisingChanged(true)] && next == nil && d.state == .on)
        #expect(d.connectionOpened() == [.advertisingChanged(false)])
        #expect(d.setDesired(Self.p)?.commands == [Self.enable])
    }

    @Test func newPayloadsWhileOnDisableReconfigureAndEnable() {
        var d = AdvertisingDriver()
        _ = d.setDesired(Self.p)
        _ = d.batchFinished(failure: nil, connected: false)
        #expect(d.setDesired(Self.q)?.commands == [Self.disable] + Self.q.configurationCommands + [Self.enable])
        #expect(d.setDesired(nil) == nil)
        let (_, next) = d.batchFinished(failure: nil, connected: false)
        #expect(next?.commands == [Self.disable])
    }

    /// The kernel-transport race (issue 9): a central connects while an enabling batch is in
    /// flight. The batch's "on" is stale: it counts as off, and when advertising is no longer
    /// wanted a disable makes sure. Before the fix the result overwrote the connection's "off".
    @Test func aConnectionDuringAnEnablingBatchMakesItsResultOff() {
        var d = AdvertisingDriver()
        _ = d.setDesired(Self.p)
        #expect(d.connectionOpened().isEmpty)
        let (events, next) = d.batchFinished(failure: nil, connected: true)
        #expect(events == [.advertisingChanged(false)])
        #expect(d.state == .running(enabling: false))
        #expect(next?.commands == [Self.disable])
        // The core asks again meanwhile: it follows the disable.
        #expect(d.setDesired(Self.p) == nil)
        let (_, after) = d.batchFinished(failure: nil, connected: true)
        #expect(after?.commands == [Self.enable])
    }

    @Test func aRefusalWhileConnectedIsReportedAndNotRetried() {
        var d = AdvertisingDriver()
        _ = d.setDesired(Self.p)
        let (events, next) = d.batchFinished(failure: (Self.enable, .commandDisallowed), connected: true)
        #expect(events == [.advertisingRefused(whileConnected: true, reason: "LE Set Advertising Enable: Command Disallowed (0x0C)")])
        #expect(next == nil && d.state == .off && d.desired == nil)
        // The configuration commands succeeded: only the enable is sent next time.
        #expect(d.setDesired(Self.p)?.commands == [Self.enable])
    }

    @Test func aDisableOfAControllerThatIsNotAdvertisingIsFine() {
        var d = AdvertisingDriver()
        _ = d.setDesired(Self.p)
        _ = d.batchFinished(failure: nil, connected: false)
        _ = d.setDesired(nil)
        let (events, next) = d.batchFinished(failure: (Self.disable, .commandDisallowed), connected: false)
        #expect(events.isEmpty && next == nil && d.state == .off)
    }
}

/// Optional HCI commands must never cost the centrals their connections (issue 9).
@Suite struct HCICommandTimeoutTests {
    @Test func anOptionalCommandTheControllerNeverAnswersIsGivenUp() {
        var h = HostHarness()
        h.bringUp()
        h.autoAnswer = false
        h.connect(0x40)  // LE Set Data Length and LE Set PHY follow
        #expect(h.sentOpcodes.first == .leSetDataLength)
        h.advance(to: .seconds(5))
        #expect(h.fatals.isEmpty)
        #expect(h.warnings.contains("the controller did not answer LE Set Data Length within 5.0 seconds; going on without it"))
        #expect(h.sentOpcodes.suffix(1) == [.leSetPHY])  // the queue went on
        #expect(h.host.connections.count == 1)
        h.answerNext()  // the controller answers again: the count of silences resets
        h.unanswered = []
    }

    @Test func twoSilencesInARowMeanTheControllerStoppedAnswering() {
        var h = HostHarness()
        h.bringUp()
        h.autoAnswer = false
        h.connect(0x40)
        h.advance(to: .seconds(5))
        h.advance(to: .seconds(10))
        #expect(h.fatals == ["the controller did not answer LE Set PHY within 5.0 seconds"])
    }

    @Test func aMandatoryCommandTimeoutIsFatal() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        h.advance(to: .seconds(5))
        #expect(h.fatals == ["the controller did not answer Reset within 5.0 seconds"])
    }

    @Test func perConnectionTuningIsSentOnlyWhenTheControllerListsTheCommands() {
        var c = FakeController()
        c.supportedCommands.removeAll { $0 == .leSetDataLength || $0 == .leSetPHY }
        var h = HostHarness(controller: c)
        h.bringUp()
        h.connect(0x40)
        #expect(!h.sentOpcodes.contains(.leSetDataLength) && !h.sentOpcodes.contains(.leSetPHY))
    }
}

@Suite struct DataLengthAndPHYConfigTests {
    @Test func theRequestCanBeTurnedOffInTheConfig() throws {
        let on = try ConfigFixture.load(#"{"name": "x"}"#)
        #expect(on.advertising.requestDataLengthAndPHY)
        let off = try ConfigFixture.load(#"{"name": "x", "connection": {"data_length_and_phy": false}}"#)
        #expect(!off.advertising.requestDataLengthAndPHY)
        var h = HostHarness(configuration: HostConfiguration(deviceName: "x", advertising: off.advertising))
        h.bringUp()
        h.connect(0x40)
        #expect(!h.sentOpcodes.contains(.leSetDataLength) && !h.sentOpcodes.contains(.leSetPHY))
        #expect(throws: ConfigErrors.self) { try ConfigFixture.load(#"{"name": "x", "connection": {"data_length_and_phy": 1}}"#) }
    }
}
