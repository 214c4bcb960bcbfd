import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The application calls: advertise on/off, disconnect, shutdown; ATT timers.
@Suite struct HostControlTests {
    static let enable = H4Packet(command: .leSetAdvertisingEnable(true))
    static let disable = H4Packet(command: .leSetAdvertisingEnable(false))

    @Test func advertisingOffAndOn() {
        var h = HostHarness()
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        #expect(h.sent.map(\.encoded) == [[0x01, 0x0A, 0x20, 0x01, 0x00]])
        #expect(h.events == [.advertisingChanged(false)])
        #expect(!h.host.isAdvertising && !h.host.advertisingEnabled)
        h.clearLogs()
        h.take(h.host.setAdvertising(false, now: h.now))
        #expect(h.sent.isEmpty)
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sent == [Self.enable])
        #expect(h.events == [.advertisingChanged(true)])
        h.clearLogs()
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sent.isEmpty)
    }

    @Test func advertisingOffKeepsItOffAcrossConnections() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.take(h.host.setAdvertising(false, now: h.now))
        h.clearLogs()
        h.disconnected(0x40)
        #expect(h.sentCommands.isEmpty)
        #expect(h.host.isIdle)
    }

    @Test func advertisingOnBeforeTheDisableCompletesEndsAdvertising() {
        var h = HostHarness()
        h.bringUp()
        h.autoAnswer = false
        h.take(h.host.setAdvertising(false, now: h.now))
        h.take(h.host.setAdvertising(true, now: h.now))
        #expect(h.sent == [Self.disable])
        h.answerNext()
        #expect(h.sent == [Self.disable, Self.enable])
        h.answerNext()
        #expect(h.host.isAdvertising)
        #expect(h.events == [.advertisingChanged(false), .advertisingChanged(true)])
        #expect(h.unanswered.isEmpty)
    }

    @Test func advertisingOffWhileTheEnableIsOutstanding() {
        var h = HostHarness()
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        h.clearLogs()
        h.autoAnswer = false
        h.take(h.host.setAdvertising(true, now: h.now))
        h.take(h.host.setAdvertising(false, now: h.now))
        #expect(h.sent == [Self.enable])
        while !h.unanswered.isEmpty { h.answerNext() }
        // Exactly one disable follows the enable.
        #expect(h.sent == [Self.enable, Self.disable])
        #expect(!h.host.isAdvertising)
        #expect(h.host.isIdle)
    }

    @Test func advertisingOffWhileTheEnableIsStillQueued() {
        var h = HostHarness()
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        h.clearLogs()
        h.autoAnswer = false
        h.take(h.host.disconnect(0x99, now: h.now))  // unknown: nothing
        h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0, encryptedDiversifier: 0)))
        h.take(h.host.setAdvertising(true, now: h.now))  // queued behind the negative reply
        h.take(h.host.setAdvertising(false, now: h.now))
        while !h.unanswered.isEmpty { h.answerNext() }
        // The queued enable runs; the disable that follows leaves advertising off.
        #expect(h.sentCommands == [
            H4Packet(command: .leLongTermKeyRequestNegativeReply(handle: 0x40)), Self.enable, Self.disable,
        ])
        #expect(!h.host.isAdvertising)
        #expect(h.host.isIdle)
    }

    @Test func disconnectSendsDisconnect() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        h.take(h.host.disconnect(0x40, now: h.now))
        #expect(h.sent.map(\.encoded) == [[0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13]])
        h.clearLogs()
        h.take(h.host.disconnect(0x40, reason: .remoteDeviceTerminatedPowerOff, now: h.now))
        #expect(h.sent.map(\.encoded) == [[0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x15]])
        h.clearLogs()
        h.take(h.host.disconnect(0x41, now: h.now))
        #expect(h.sent.isEmpty)
        // Command Status failure: a warning, the connection stays.
        h.controller.status[.disconnect] = .unknownConnectionIdentifier
        h.take(h.host.disconnect(0x40, now: h.now))
        #expect(h.warnings == ["Disconnect failed: Unknown Connection Identifier (0x02)"])
        #expect(h.host.connections.count == 1)
        h.clearLogs()
        h.deliver(.disconnectionComplete(status: .commandDisallowed, handle: 0x40, reason: .success))
        #expect(h.warnings == ["Disconnect of handle 64 failed: Command Disallowed (0x0C)"])
        #expect(h.host.connections.count == 1)
    }

    @Test func shutdownStopsAdvertisingAndDisconnectsEveryone() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        h.connect(0x40)
        h.clearLogs()
        h.take(h.host.shutdown(now: h.now))
        #expect(h.sent.map(\.encoded) == [
            [0x01, 0x0A, 0x20, 0x01, 0x00],
            [0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13],
            [0x01, 0x06, 0x04, 0x03, 0x41, 0x00, 0x13],
        ])
        #expect(!h.host.isIdle)
        h.disconnected(0x40, reason: .connectionTerminatedByLocalHost)
        #expect(!h.host.isIdle)
        h.disconnected(0x41, reason: .connectionTerminatedByLocalHost)
        #expect(h.host.isIdle)
        #expect(h.sent.count == 3)  // advertising stays off
        #expect(!h.host.isAdvertising)
    }

    @Test func shutdownWhenNothingIsGoingOnIsIdleAtOnce() {
        var h = HostHarness()
        h.bringUp()
        h.take(h.host.setAdvertising(false, now: h.now))
        h.clearLogs()
        h.take(h.host.shutdown(now: h.now))
        #expect(h.sent.isEmpty)
        #expect(h.host.isIdle)
    }

    @Test func indicationTimeoutDisconnects() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.receive([0x12, 0x15, 0x00, 0x02, 0x00], handle: 0x40)  // subscribe to indications
        h.completed([(0x40, 1)])
        h.clearLogs()
        let (r, out) = h.host.notify(characteristic: ATTFixture.notify, value: [7], now: h.now)
        h.take(out)
        #expect(r == .queued(1))
        #expect(h.sentPayloads(handle: 0x40) == [[0x1D, 0x14, 0x00, 0x07]])
        #expect(h.host.nextDeadline == .seconds(30))
        h.clearLogs()
        h.advance(to: .seconds(30))
        #expect(h.attEvents == [.indicationTimedOut(ConnectionID(0x40), characteristic: ATTFixture.notify)])
        #expect(h.sent.map(\.encoded) == [[0x01, 0x06, 0x04, 0x03, 0x40, 0x00, 0x13]])
    }

    @Test func aFailedHostHasNoDeadline() {
        var h = HostHarness()
        h.bringUp()
        h.connect(0x40)
        h.receive([0x12, 0x15, 0x00, 0x02, 0x00], handle: 0x40)  // indications: an ATT deadline
        let (_, out) = h.host.notify(characteristic: ATTFixture.notify, value: [1], now: h.now)
        h.take(out)
        #expect(h.host.nextDeadline == .seconds(30))
        h.deliver(.hardwareError(code: 1))
        #expect(h.host.hasFailed)
        #expect(h.host.nextDeadline == nil)
        h.clearLogs()
        h.advance(to: .seconds(31))
        #expect(h.sent.isEmpty && h.events.isEmpty)
    }

    @Test func nothingIsSentAfterAFatalEvent() {
        var h = HostHarness()
        h.autoAnswer = false
        h.start()
        h.advance(to: .seconds(5))
        #expect(h.fatals == ["the controller did not answer Reset within 5.0 seconds"])
        #expect(h.host.hasFailed)
        h.clearLogs()
        // A late answer does not resume the bring-up.
        h.answerNext()
        h.advance(to: .seconds(20))
        #expect(h.sent.isEmpty)
        #expect(h.host.nextDeadline == nil)
        // start() begins again.
        h.start()
        #expect(!h.host.hasFailed)
        #expect(h.sentOpcodes == [.reset])
    }
}
