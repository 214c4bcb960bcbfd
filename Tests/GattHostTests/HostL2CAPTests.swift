import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// LE signalling channel (Vol 3 Part A §4), SMP without pairing (Vol 3 Part H
/// §3.5.5) and the LE meta events a peripheral must answer.
@Suite struct HostL2CAPTests {
    static func connected(configuration: HostConfiguration = .test()) -> HostHarness {
        var h = HostHarness(configuration: configuration)
        h.bringUp()
        h.connect(0x40)
        h.clearLogs()
        return h
    }

    static func signalling(_ payload: [UInt8]) -> H4Packet {
        H4Packet(acl: HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: hostLE16(UInt16(payload.count)) + [0x05, 0x00] + payload))
    }

    @Test func connectionParameterUpdateRequestFromTheCentralIsRejected() {
        var h = Self.connected()
        h.receive([0x12, 0x07, 0x08, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(h.sent == [Self.signalling([0x01, 0x07, 0x02, 0x00, 0x00, 0x00])])
        #expect(h.events.isEmpty)
    }

    @Test func unknownCommandIsRejectedAsNotUnderstood() {
        var h = Self.connected()
        h.receive([0x20, 0x09, 0x02, 0x00, 0xAA, 0xBB], channel: .leSignalling, handle: 0x40)
        #expect(h.sent == [Self.signalling([0x01, 0x09, 0x02, 0x00, 0x00, 0x00])])
    }

    @Test func creditBasedConnectionRequestGetsLEPSMNotSupported() {
        var h = Self.connected()
        h.receive([0x14, 0x0A, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x40, 0x00, 0x40, 0x00, 0x05, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(h.sent == [Self.signalling([0x15, 0x0A, 0x0A, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x00])])
    }

    @Test func disconnectionRequestGetsInvalidCID() {
        var h = Self.connected()
        h.receive([0x06, 0x0B, 0x04, 0x00, 0x40, 0x00, 0x41, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(h.sent == [Self.signalling([0x01, 0x0B, 0x06, 0x00, 0x02, 0x00, 0x40, 0x00, 0x41, 0x00])])
    }

    @Test func responsesAndRejectsAreNotAnswered() {
        var h = Self.connected()
        h.receive([0x13, 0x01, 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)  // accepted
        h.receive([0x01, 0x02, 0x02, 0x00, 0x00, 0x00], channel: .leSignalling, handle: 0x40)  // Command Reject
        h.receive([0x16, 0x03, 0x04, 0x00, 0x40, 0x00, 0x01, 0x00], channel: .leSignalling, handle: 0x40)
        #expect(h.sent.isEmpty)
        #expect(h.events.isEmpty)
        h.receive([0x13, 0x04, 0x02, 0x00, 0x01, 0x00], channel: .leSignalling, handle: 0x40)  // rejected
        #expect(h.sent.isEmpty)
        #expect(h.warnings == ["connection 64: the central rejected the preferred connection parameters"])
    }

    @Test func malformedSignallingIsRejectedWhenItHasAnIdentifier() {
        var h = Self.connected()
        // Connection Parameter Update Request with 4 data bytes instead of 8.
        h.receive([0x12, 0x05, 0x04, 0x00, 1, 2, 3, 4], channel: .leSignalling, handle: 0x40)
        #expect(h.sent == [Self.signalling([0x01, 0x05, 0x02, 0x00, 0x00, 0x00])])
        #expect(h.warnings.count == 1)
        h.clearLogs()
        h.completed([(0x40, 1)])
        h.receive([0x12], channel: .leSignalling, handle: 0x40)
        #expect(h.sent.isEmpty)
        #expect(h.warnings == ["connection 64: malformed LE signalling frame dropped"])
    }

    @Test func preferredParametersAreRequestedOnConnection() {
        let preferred = PreferredConnectionParameters(intervalMinMs: 15, intervalMaxMs: 30, latency: 4, timeoutMs: 4000)
        var h = HostHarness(configuration: .test(preferred: preferred))
        h.bringUp()
        h.connect(0x40)
        // Interval 15 ms / 1.25 = 12, 30 ms / 1.25 = 24, latency 4, timeout 4000 ms / 10 = 400.
        #expect(h.sentACL == [HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: [
            0x0C, 0x00, 0x05, 0x00, 0x12, 0x01, 0x08, 0x00, 0x0C, 0x00, 0x18, 0x00, 0x04, 0x00, 0x90, 0x01,
        ])])
        // The next connection uses the next identifier.
        h.clearLogs()
        h.connect(0x41, peer: BluetoothAddress("11:22:33:44:55:77")!)
        #expect(h.sentPayloads(handle: 0x41, channel: .leSignalling) == [[0x12, 0x02, 0x08, 0x00, 0x0C, 0x00, 0x18, 0x00, 0x04, 0x00, 0x90, 0x01]])
    }

    @Test func pairingRequestGetsPairingNotSupported() {
        var h = Self.connected()
        h.receive([0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], channel: .smp, handle: 0x40)
        #expect(h.sent == [H4Packet(acl: HCIACLPacket(handle: 0x40, packetBoundary: .firstNonFlushable, data: [0x02, 0x00, 0x06, 0x00, 0x05, 0x05]))])
        h.clearLogs()
        h.receive([0x03] + [UInt8](repeating: 0, count: 16), channel: .smp, handle: 0x40)  // Pairing Confirm
        h.receive([], channel: .smp, handle: 0x40)
        #expect(h.sent.isEmpty)
    }

    @Test func longTermKeyRequestGetsANegativeReply() {
        var h = Self.connected()
        h.deliver(.leMeta(.longTermKeyRequest(handle: 0x40, randomNumber: 0x1122, encryptedDiversifier: 0x3344)))
        #expect(h.sent.map(\.encoded) == [[0x01, 0x1B, 0x20, 0x02, 0x40, 0x00]])
        #expect(h.events.isEmpty)
    }

    @Test func remoteConnectionParameterRequestIsAccepted() {
        var h = Self.connected()
        let p = LEConnectionParameters(intervalMin: 6, intervalMax: 12, latency: 0, supervisionTimeout: 200)
        h.deliver(.leMeta(.remoteConnectionParameterRequest(handle: 0x40, parameters: p)))
        #expect(h.sent.map(\.encoded) == [[0x01, 0x20, 0x20, 0x0E, 0x40, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00, 0, 0, 0, 0]])
        #expect(h.events.isEmpty)
    }

    @Test func signallingAndSMPWaitForABuffer() {
        var h = Self.connected()
        h.receive([0x02, 0x05, 0x02], handle: 0x40)
        h.receive([0x0A, 0x19, 0x00], handle: 0x40)  // MTU response + first fragment: both buffers
        h.clearLogs()
        h.receive([0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], channel: .smp, handle: 0x40)
        #expect(h.sent.isEmpty)
        h.completed([(0x40, 2)])
        // The read response's fragments go first (a frame is never interleaved), then Pairing Failed.
        h.completed([(0x40, 2)])
        #expect(h.sentFrames(handle: 0x40).map(\.channelID) == [.smp])
        #expect(h.sentPayloads(handle: 0x40, channel: .smp) == [[0x05, 0x05]])
    }
}
