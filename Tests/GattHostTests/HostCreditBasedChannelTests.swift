import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// The H4 host's credit-based channels, server role (Core Spec Vol 3 Part A §4.22–§4.28,
/// §3.4.3, §10.1): every exchange and result code, PDU by PDU.
@Suite struct HostCreditBasedChannelTests {
    static let stream = L2CAPChannelServer(id: "stream", psm: 0x80, security: .none, mtu: 2048)
    static let secret = L2CAPChannelServer(id: "secret", psm: 0x81, security: .encryption, mtu: 100)
    static let strict = L2CAPChannelServer(id: "strict", psm: 0x82, security: .authentication, mtu: 100)
    static let channel = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x40)

    static func connected(_ servers: [L2CAPChannelServer] = [stream, secret, strict], buffers: UInt8 = 250) -> HostHarness {
        var c = FakeController()
        c.leBuffers = (251, buffers)  // by default room for every packet a test makes
        var t = HostHarness(controller: c)
        t.bringUp()
        t.connect(0x40)
        t.host.host.setL2CAPChannelServers(servers)
        t.clearLogs()
        return t
    }

    /// `connected`, then the central opens a channel to `stream` (source CID 0x40, MTU 512,
    /// MPS 247, `credits`); the logs are cleared.
    static func opened(credits: UInt16 = 10, buffers: UInt8 = 250) -> HostHarness {
        var t = connected(buffers: buffers)
        t.receive(h("14 01 0A 00 80 00 40 00 00 02 F7 00") + hostLE16(credits), channel: .leSignalling, handle: 0x40)
        #expect(t.signalling == [h("15 01 0A 00 40 00 00 08 F7 00 12 00 00 00")])
        t.clearLogs()
        return t
    }

    @Test func leConnectionRequestIsAccepted() {
        var t = Self.connected()
        // LE_PSM 0x80, source CID 0x40, MTU 512, MPS 247, 10 credits → our CID 0x40, MTU 2048, MPS 247, 18 credits.
        t.signal("14 01 0A 00 80 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling == [h("15 01 0A 00 40 00 00 08 F7 00 12 00 00 00")])
        #expect(t.channelEvents == [.opened(Self.channel, server: "stream", psm: 0x80, peerMTU: 512, mtu: 2048), .ready(Self.channel)])
        #expect(t.host.host.creditBasedChannels[Self.channel]?.peer == CreditBasedEndpoint(cid: 0x40, mtu: 512, mps: 247))
        // A second channel gets the next CID.
        t.clearLogs()
        t.signal("14 02 0A 00 80 00 41 00 17 00 17 00 01 00")
        #expect(t.signalling == [h("15 02 0A 00 41 00 00 08 F7 00 12 00 00 00")])
    }

    /// Each refusal of the LE Credit Based Connection Request (§4.23), all other fields 0.
    @Test(arguments: [
        ("14 01 0A 00 90 00 40 00 00 02 F7 00 0A 00", "02 00"),  // no server: LE_PSM not supported
        ("14 01 0A 00 27 00 40 00 00 02 F7 00 0A 00", "02 00"),  // EATT is not an LE Credit Based channel
        ("14 01 0A 00 80 00 40 00 16 00 F7 00 0A 00", "0B 00"),  // MTU 22: unacceptable parameters
        ("14 01 0A 00 80 00 40 00 00 02 16 00 0A 00", "0B 00"),  // MPS 22
        ("14 01 0A 00 80 00 40 00 00 02 FE FF 0A 00", "0B 00"),  // MPS 65534
        ("14 01 0A 00 81 00 40 00 00 02 F7 00 0A 00", "05 00"),  // unencrypted, no bond: insufficient authentication
        ("14 01 0A 00 80 00 3F 00 00 02 F7 00 0A 00", "09 00"),  // source CID 0x003F: invalid
        ("14 01 0A 00 80 00 80 00 00 02 F7 00 0A 00", "09 00"),  // source CID 0x0080: invalid on LE
    ])
    func leConnectionRequestRefusals(request: String, result: String) {
        var t = Self.connected()
        t.signal(request)
        #expect(t.signalling == [h("15 01 0A 00 00 00 00 00 00 00 00 00 " + result)])
        #expect(t.channelEvents.isEmpty)
        // Logged, with the result's name.
        #expect(t.warnings.count == 1 && t.warnings[0].hasPrefix("connection 64: L2CAP channel to PSM ") && t.warnings[0].contains(" refused: "))
    }

    @Test func securityRefusals() {
        let bond = Bond(address: HostHarness.central, addressType: .random, longTermKey: [UInt8](repeating: 1, count: 16), keySize: 16, authenticated: false, secureConnections: true)
        var t = Self.connected()
        // Unencrypted, but we hold the central's keys: it only has to encrypt.
        t.host.host.setBonds([bond])
        t.signal("14 01 0A 00 81 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("08 00"))
        // Encrypted with unauthenticated keys: enough for "encryption", not for "authentication".
        t.host.host.linkTable.connections[0x40]?.security = .medium
        t.host.host.linkTable.connections[0x40]?.keySize = 16
        t.signal("14 02 0A 00 82 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("05 00"))
        t.signal("14 03 0A 00 81 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("00 00"))
        // Authenticated keys pass "authentication"; a 6-octet key passes nothing secured.
        t.host.host.linkTable.connections[0x40]?.security = .high
        t.signal("14 04 0A 00 82 00 41 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("00 00"))
        t.host.host.linkTable.connections[0x40]?.keySize = 6
        t.signal("14 05 0A 00 81 00 42 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("07 00"))
        t.signal("14 06 0A 00 80 00 42 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("00 00"))
    }

    @Test func sourceCIDAlreadyAllocatedAndNoResources() {
        var t = Self.opened()
        t.signal("14 02 0A 00 80 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling == [h("15 02 0A 00 00 00 00 00 00 00 00 00 0A 00")])
        // The 64 dynamic CIDs of the link in use: no resources.
        for scid in UInt16(0x41)...0x7F { _ = t.host.host.handleChannelSignalling(
            LESignallingPDU(identifier: 9, command: .leCreditBasedConnectionRequest(lePSM: 0x80, sourceCID: scid, mtu: 23, mps: 23, initialCredits: 0)), handle: 0x40) }
        #expect(t.host.host.creditBasedChannels.count == 64)
        // Closing one frees the central's CID at once, ours only when the central answered.
        t.hostCall { $0.close(CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x7F), now: $1) }
        t.clearLogs()
        t.signal("14 03 0A 00 80 00 7F 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("04 00"))
    }

    @Test func unknownServersAfterTheListChanges() {
        var t = Self.opened()
        t.host.host.setL2CAPChannelServers([])
        t.signal("14 02 0A 00 80 00 41 00 00 02 F7 00 0A 00")
        #expect(t.signalling.last.map { Array($0.suffix(2)) } == h("02 00"))
        #expect(t.warnings == ["connection 64: L2CAP channel to PSM 128 refused: LE_PSM not supported (0x0002)"])
        // The open channel stays open.
        #expect(t.host.host.creditBasedChannels[Self.channel] != nil)
    }

    // MARK: Enhanced Credit Based (§4.25–§4.28)

    @Test func enhancedConnectionRequestOpensSeveralChannels() {
        var t = Self.opened()
        // SPSM 0x80, MTU 100, MPS 64, 4 credits, source CIDs 0x41, 0x40 (taken), 0x20 (invalid), 0x42.
        t.signal("17 02 10 00 80 00 64 00 40 00 04 00 41 00 40 00 20 00 42 00")
        // Our MTU 2048, MPS 247, 18 credits; "some refused" names the last refusal.
        #expect(t.signalling == [h("18 02 10 00 00 08 F7 00 12 00 09 00 41 00 00 00 00 00 42 00")])
        let a = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x41), b = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x42)
        #expect(t.channelEvents == [
            .opened(a, server: "stream", psm: 0x80, peerMTU: 100, mtu: 2048), .opened(b, server: "stream", psm: 0x80, peerMTU: 100, mtu: 2048),
            .ready(a), .ready(b),
        ])
        #expect(t.host.host.creditBasedChannels[a]?.mode == .enhancedCreditBased)
    }

    /// Refusals of the whole request, with a 0x0000 CID for each asked for.
    @Test(arguments: [
        ("17 01 08 00 80 00 64 00 40 00 04 00", "0C 00", 0),  // no CIDs: invalid parameters
        ("17 01 14 00 80 00 64 00 40 00 04 00 40 00 41 00 42 00 43 00 44 00 45 00", "0C 00", 6),  // six
        ("17 01 0A 00 80 00 3F 00 40 00 04 00 40 00", "0B 00", 1),  // MTU 63: unacceptable parameters
        ("17 01 0A 00 80 00 40 00 3F 00 04 00 40 00", "0B 00", 1),  // MPS 63
        ("17 01 0A 00 90 00 40 00 40 00 04 00 40 00", "02 00", 1),  // SPSM not supported
        ("17 01 0A 00 27 00 40 00 40 00 04 00 40 00", "02 00", 1),  // EATT off (the default)
        ("17 01 0A 00 81 00 40 00 40 00 04 00 40 00", "05 00", 1),  // insufficient authentication
    ])
    func enhancedConnectionRequestRefusals(request: String, result: String, cids: Int) {
        var t = Self.connected()
        t.signal(request)
        let length = UInt8(8 + 2 * cids)
        #expect(t.signalling == [[0x18, 0x01, length, 0x00] + h("00 00 00 00 00 00 " + result) + [UInt8](repeating: 0, count: 2 * cids)])
        #expect(t.channelEvents.isEmpty)
    }

    @Test func reconfigureRequest() {
        var t = Self.connected()
        t.signal("17 01 0C 00 80 00 64 00 40 00 04 00 40 00 41 00")
        t.signal("14 02 0A 00 80 00 50 00 00 02 F7 00 0A 00")  // an LE-mode channel: not reconfigurable
        t.clearLogs()
        t.signal("19 03 08 00 C8 00 50 00 40 00 41 00")  // MTU 200, MPS 80 for both
        #expect(t.signalling == [h("1A 03 02 00 00 00")])
        #expect(t.host.host.creditBasedChannels[Self.channel]?.peer == CreditBasedEndpoint(cid: 0x40, mtu: 200, mps: 80))
        t.clearLogs()
        t.signal("19 04 06 00 64 00 50 00 40 00")  // MTU down to 100
        t.signal("19 05 08 00 C8 00 40 00 40 00 41 00")  // MPS down with two channels
        t.signal("19 06 06 00 C8 00 40 00 40 00")  // MPS down with one channel: allowed
        t.signal("19 07 06 00 C8 00 50 00 43 00")  // no such channel
        t.signal("19 08 06 00 C8 00 50 00 50 00")  // the LE-mode channel
        t.signal("19 09 06 00 3F 00 50 00 40 00")  // MTU 63: unacceptable
        t.signal("19 0A 04 00 C8 00 50 00")  // no CIDs: unacceptable
        #expect(t.signalling.map { Array($0.suffix(2)) } == [h("01 00"), h("02 00"), h("00 00"), h("03 00"), h("03 00"), h("04 00"), h("04 00")])
    }

    // MARK: Data and credits (§3.4.3, §4.24)

    @Test func sdusAreReassembledAndCreditsReturnOnlyWhenConsumed() {
        var t = Self.opened()
        let sdu = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let frames = CreditBasedChannel.segment(sdu, mps: 247)
        t.receive(frames[0], channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.channelEvents.isEmpty)
        t.receive(frames[1], channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.channelEvents == [.received(Self.channel, sdu)])
        #expect(t.signalling.isEmpty)  // no credits until the layer above took it
        t.hostCall { $0.consumed(on: Self.channel, now: $1) }
        #expect(t.signalling == [h("16 01 04 00 40 00 02 00")])  // our CID, 2 credits back
        t.clearLogs()
        t.hostCall { $0.consumed(on: Self.channel, now: $1) }
        #expect(t.sent.isEmpty)
    }

    @Test func sendingWaitsForTheCentralsCredits() {
        var t = Self.opened(credits: 1)
        let sdu = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        t.hostCall { $0.send(sdu: sdu, on: Self.channel, now: $1) }
        // One credit: the first K-frame only, on the central's CID.
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [CreditBasedChannel.segment(sdu, mps: 247)[0]])
        #expect(t.channelEvents.isEmpty)
        t.clearLogs()
        t.signal("16 03 04 00 40 00 05 00")
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [CreditBasedChannel.segment(sdu, mps: 247)[1]])
        // Drained with credits left: ready for the next SDU.
        #expect(t.channelEvents == [.ready(Self.channel)])
        // An SDU above the central's MTU is dropped with a warning.
        t.clearLogs()
        t.hostCall { $0.send(sdu: [UInt8](repeating: 0, count: 513), on: Self.channel, now: $1) }
        #expect(t.sent.isEmpty)
        #expect(t.warnings == ["connection 64 CID 0x0040: SDU of 513 bytes exceeds the central's MTU 512; dropped"])
    }

    @Test func readyWhenSentNamesTheChannelOnceItsSDULeftWithoutCredits() {
        var t = Self.opened(credits: 1)
        t.hostCall { $0.send(sdu: [1, 2, 3], on: Self.channel, now: $1) }
        // The SDU took the central's only credit: no invitation.
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [[3, 0, 1, 2, 3]])
        #expect(t.channelEvents.isEmpty)
        // The program left: asked for, `.ready` comes though the central has no credits.
        t.hostCall { $0.readyWhenSent(Self.channel, now: $1) }
        #expect(t.channelEvents == [.ready(Self.channel)])
        // With an SDU still waiting for credits, only once it has left.
        t.clearLogs()
        t.hostCall { $0.send(sdu: [4], on: Self.channel, now: $1) }
        #expect(t.sent.isEmpty && t.channelEvents.isEmpty)
        t.signal("16 03 04 00 40 00 01 00")
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [[1, 0, 4]])
        #expect(t.channelEvents == [.ready(Self.channel)])
    }

    @Test func attAndChannelsTakeTurns() {
        var t = Self.opened(credits: 100, buffers: 1)
        t.signal("14 02 0A 00 80 00 41 00 00 02 F7 00 64 00")
        t.completed([(0x40, 1)])
        let second = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x41)
        let big = [UInt8](repeating: 1, count: 500)  // 3 K-frames each
        t.hostCall { $0.send(sdu: big, on: Self.channel, now: $1) }
        t.hostCall { $0.send(sdu: big, on: second, now: $1) }
        t.host.host.send([0x1B, 0x03, 0x00, 0x01], on: .fixed(ConnectionID(0x40)))
        t.clearLogs()
        for _ in 0..<20 { t.completed([(0x40, 1)]) }
        // One frame each in turn: ATT is never starved (K-frames go on the central's CIDs).
        #expect(t.sentFrames(handle: 0x40).map(\.channelID.rawValue) == [0x04, 0x40, 0x41, 0x40, 0x41, 0x40, 0x41])
        #expect(t.host.host.aclInvariantViolations.isEmpty)
    }

    /// Each violation disconnects the channel: Disconnection Request, `.closed`.
    @Test(arguments: [
        ([UInt8](repeating: 1, count: 250), "K-frame of 250 bytes exceeds our MPS 247"),
        ([0x01, 0x08, 0x00], "SDU length 2049 exceeds our MTU 2048"),
        ([0x01, 0x00, 0x01, 0x02], "SDU length 1 but its K-frames carry 2 bytes"),
    ])
    func violationsDisconnectTheChannel(kFrame: [UInt8], reason: String) {
        var t = Self.opened()
        t.receive(kFrame, channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.signalling == [h("06 01 04 00 40 00 40 00")])
        #expect(t.channelEvents == [.closed(Self.channel, reason: reason)])
        #expect(t.host.host.creditBasedChannels.isEmpty)
        // K-frames in flight are dropped quietly until the central answers.
        t.clearLogs()
        t.receive([1, 0, 1], channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.events.isEmpty)
        t.signal("07 01 04 00 40 00 40 00")
        t.receive([1, 0, 1], channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.warnings == ["connection 64: K-frame for CID 0x0040, which is not open, dropped"])
    }

    @Test func kFramesBeyondTheCreditsDisconnect() {
        var t = Self.opened()
        for _ in 0..<18 { t.receive([1, 0, 1], channel: L2CAPChannelID(0x40), handle: 0x40) }
        #expect(t.channelEvents.count == 18)
        t.clearLogs()
        t.receive([1, 0, 1], channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.channelEvents == [.closed(Self.channel, reason: "K-frame received with no credits left")])
    }

    @Test func creditsPast65535Disconnect() {
        var t = Self.opened(credits: 0xFFF0)
        t.signal("16 02 04 00 40 00 0F 00")
        #expect(t.channelEvents.isEmpty)
        t.signal("16 03 04 00 40 00 01 00")
        #expect(t.signalling == [h("06 01 04 00 40 00 40 00")])
        #expect(t.channelEvents == [.closed(Self.channel, reason: "credits would reach 65536, past 65535")])
    }

    @Test func theCentralDisconnectsAChannel() {
        var t = Self.opened()
        // Wrong source CID: Command Reject, invalid CID in request.
        t.signal("06 02 04 00 40 00 41 00")
        #expect(t.signalling == [h("01 02 06 00 02 00 40 00 41 00")])
        t.clearLogs()
        t.signal("06 03 04 00 40 00 40 00")
        #expect(t.signalling == [h("07 03 04 00 40 00 40 00")])
        #expect(t.channelEvents == [.closed(Self.channel, reason: "the central disconnected it")])
        #expect(t.host.host.creditBasedChannels.isEmpty)
    }

    @Test func weCloseAChannel() {
        var t = Self.opened()
        t.hostCall { $0.close(Self.channel, now: $1) }
        #expect(t.signalling == [h("06 01 04 00 40 00 40 00")])
        #expect(t.channelEvents.isEmpty)
        // The CID is not reused before the central answered.
        t.clearLogs()
        t.signal("14 02 0A 00 80 00 41 00 00 02 F7 00 0A 00")
        #expect(t.signalling == [h("15 02 0A 00 41 00 00 08 F7 00 12 00 00 00")])
        t.signal("07 01 04 00 40 00 40 00")
        #expect(t.host.host.channels.disconnecting.isEmpty)
    }

    @Test func warningsAboutACentralAreLoggedEightTimesPerLinkAtMost() {
        var t = Self.connected()
        for i in 1...12 { t.signal("14 0\(String(i, radix: 16, uppercase: true)) 0A 00 90 00 40 00 00 02 F7 00 0A 00") }
        // Each is answered (LE_PSM not supported)…
        #expect(t.signalling.count == 12 && t.signalling.allSatisfy { $0.suffix(2) == [0x02, 0x00] })
        // …but the log has eight of them and one line saying the rest are not logged.
        #expect(t.warnings.count == 9)
        #expect(t.warnings.first == "connection 64: L2CAP channel to PSM 144 refused: LE_PSM not supported (0x0002)")
        #expect(t.warnings.last == "connection 64: further warnings about what this central sends are not logged (8 so far)")
        // Frames for CIDs that are not open count too: nothing more is logged.
        t.receive([0x01, 0x00, 0xAA], channel: L2CAPChannelID(0x50), handle: 0x40)
        t.receive([0x01], channel: L2CAPChannelID(0x0020), handle: 0x40)
        #expect(t.warnings.count == 9)
        // A new link has its own share.
        t.disconnected(0x40)
        t.connect(0x40)
        t.clearLogs()
        t.signal("14 01 0A 00 90 00 40 00 00 02 F7 00 0A 00")
        #expect(t.warnings.count == 1)
    }

    @Test func anUnansweredDisconnectionRequestFreesItsCIDAfterTheRTXTimer() {
        var t = Self.opened()
        t.hostCall { $0.close(Self.channel, now: $1) }
        #expect(t.host.host.nextDeadline == t.now + .seconds(2))
        t.advance(to: t.now + .milliseconds(1999))
        #expect(t.host.host.channels.disconnecting.count == 1)
        // The RTX timer (Vol 3 Part A §6.2.1) runs out: the CID serves a new channel.
        t.advance(to: t.now + .milliseconds(1))
        #expect(t.host.host.channels.disconnecting.isEmpty)
        #expect(t.warnings == ["connection 64 CID 0x0040: no Disconnection Response within 2.0 seconds; its CID is free again"])
        t.clearLogs()
        t.signal("14 02 0A 00 80 00 41 00 00 02 F7 00 0A 00")
        #expect(t.signalling == [h("15 02 0A 00 40 00 00 08 F7 00 12 00 00 00")])
    }

    @Test func theLinkDroppingClosesEveryChannel() {
        var t = Self.opened()
        t.signal("14 02 0A 00 80 00 41 00 00 02 F7 00 0A 00")
        t.clearLogs()
        t.disconnected(0x40)
        let b = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x41)
        #expect(t.channelEvents == [.closed(Self.channel, reason: "the link dropped"), .closed(b, reason: "the link dropped")])
        #expect(t.host.host.creditBasedChannels.isEmpty)
    }
}

extension HostHarness {
    /// The central sends one LE signalling command (hex) on connection 0x40.
    mutating func signal(_ hex: String) { self.receive(h(hex), channel: .leSignalling, handle: 0x40) }
    /// The LE signalling commands the host sent on connection 0x40.
    var signalling: [[UInt8]] { sentPayloads(handle: 0x40, channel: .leSignalling) }
    /// Calls the host below the stack (the transport's channel inputs) and records what it made.
    mutating func hostCall(_ body: (inout Host, Duration) -> [HostOutput]) { take(host.call(body, now: now)) }
    var channelEvents: [CreditBasedChannelEvent] { events.compactMap { if case .channel(let e) = $0 { e } else { nil } } }
}
