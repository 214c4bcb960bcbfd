import Testing
@testable import GattCore
@testable import GattHost
import GattTestFixtures

/// Enhanced ATT bearers on the H4 host (Core Spec Vol 3 Part F §3.2.11, Part A §4.25–§4.27):
/// Enhanced Credit Based channels on PSM 0x0027 become ATT bearers of the core, PDU by PDU.
/// Handles are `ATTFixture`'s (rw value 0x0012, notify 0x0014 with CCCD 0x0015, control
/// 0x001F with CCCD 0x0020).
@Suite struct HostEnhancedATTTests {
    static func bearer(_ cid: UInt16) -> BearerID { BearerID(ConnectionID(0x40), channel: cid) }

    /// Connection 0x40 up, EATT `on`, the link encrypted when `encrypted`; logs cleared.
    static func connected(eatt on: Bool = true, encrypted: Bool = true) -> HostHarness {
        var c = FakeController()
        c.leBuffers = (251, 250)  // room for every packet a test makes
        var t = HostHarness(controller: c)
        t.bringUp()
        t.connect(0x40)
        t.host.host.setEnhancedATT(on)
        t.host.setDeferredAccessAvailable(true)
        if encrypted {
            t.host.host.linkTable.connections[0x40]?.security = .medium
            t.host.host.linkTable.connections[0x40]?.keySize = 16
        }
        t.clearLogs()
        return t
    }

    /// `connected`, then five EATT channels in one request: source CIDs 0x40–0x44, MTU 512,
    /// MPS 247, 10 credits each.
    static func fiveBearers() -> HostHarness {
        var t = connected()
        t.signal("17 01 12 00 27 00 00 02 F7 00 0A 00 40 00 41 00 42 00 43 00 44 00")
        // Our MTU 517 (0x0205), MPS 247, 6 credits (two whole SDUs); our CIDs 0x40–0x44.
        #expect(t.signalling == [h("18 01 12 00 05 02 F7 00 06 00 00 00 40 00 41 00 42 00 43 00 44 00")])
        t.clearLogs()
        return t
    }

    /// One ATT PDU from the central on an EATT channel (our CID `cid`): a K-frame with its SDU length.
    static func kFrame(_ pdu: [UInt8]) -> [UInt8] { [UInt8(pdu.count), 0x00] + pdu }

    @Test func fiveChannelsInOneRequestAreFiveBearersOfTheClient() {
        let t = Self.fiveBearers()
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))] + (0x40...0x44).map { Self.bearer($0) })
        // ATT_MTU: the smaller MTU, the central's 512.
        #expect((0x40...0x44).allSatisfy { t.host.core.att.mtu(for: Self.bearer($0)) == 512 })
        // Never a socket: no channel event for the transport.
        #expect(t.channelEvents.isEmpty)
    }

    @Test func eattOffIsLEPSMNotSupported() {
        var t = Self.connected(eatt: false)
        t.signal("17 01 0A 00 27 00 00 02 F7 00 0A 00 40 00")
        #expect(t.signalling == [h("18 01 0A 00 00 00 00 00 00 00 02 00 00 00")])
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))])
    }

    @Test func anLECreditBasedRequestToTheEATTPSMIsRefused() {
        var t = Self.connected()
        // EATT uses Enhanced Credit Based mode only: LE Credit Based to 0x0027 → LE_PSM not supported.
        t.signal("14 01 0A 00 27 00 40 00 00 02 F7 00 0A 00")
        #expect(t.signalling == [h("15 01 0A 00 00 00 00 00 00 00 00 00 02 00")])
    }

    @Test func anUnencryptedLinkIsRefused() {
        var t = Self.connected(encrypted: false)
        // No bond: Insufficient Authentication (0x0005).
        t.signal("17 01 0A 00 27 00 00 02 F7 00 0A 00 40 00")
        #expect(t.signalling == [h("18 01 0A 00 00 00 00 00 00 00 05 00 00 00")])
        // A bonded central only has to encrypt: Insufficient Encryption (0x0008).
        t.host.host.setBonds([Bond(
            address: HostHarness.central, addressType: .random, longTermKey: [UInt8](repeating: 1, count: 16), keySize: 16,
            authenticated: false, secureConnections: true)])
        t.clearLogs()
        t.signal("17 02 0A 00 27 00 00 02 F7 00 0A 00 40 00")
        #expect(t.signalling == [h("18 02 0A 00 00 00 00 00 00 00 08 00 00 00")])
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))])
    }

    @Test func aRequestIsAnsweredOnItsBearerWhileAnotherBearerWaitsForADeferredRead() throws {
        var t = Self.fiveBearers()
        // Bearer 0x40: Read Request of the control characteristic (0x001F): handed out, no answer yet.
        t.receive(Self.kFrame([0x0A, 0x1F, 0x00]), channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.attEvents == [.deferredAccess(id: PendingRequestID(1), ConnectionID(0x40), .read(characteristic: ATTFixture.control, offset: 0))])
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)).isEmpty)
        // Its credit goes back at once (our CID 0x40, 1 credit).
        #expect(t.signalling.map { Array($0[2...]) } == [h("04 00 40 00 01 00")])
        t.clearLogs()
        // Bearer 0x41: Read Request of rw (0x0012), answered on 0x41 (the central's CID 0x41) at once.
        t.receive(Self.kFrame([0x0A, 0x12, 0x00]), channel: L2CAPChannelID(0x41), handle: 0x40)
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x41)) == [h("03 00 0B 01 02")])
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)).isEmpty)
        #expect(t.sentPayloads(handle: 0x40).isEmpty, "nothing on the fixed channel")
        t.clearLogs()
        // The deferred read answered: its response on 0x40.
        t.take(try t.host.respond(to: PendingRequestID(1), result: .success([0xC1]), now: t.now))
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [h("02 00 0B C1")])
    }

    @Test func indicationsAndNotificationsUseEnhancedBearers() {
        var t = Self.fiveBearers()
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        t.receive([0x12, 0x15, 0x00, 0x02, 0x00], handle: 0x40)  // notify (0x0014): indications
        t.receive([0x12, 0x09, 0x00, 0x02, 0x00], handle: 0x40)  // Service Changed (0x0008): indications
        t.receive([0x12, 0x20, 0x00, 0x01, 0x00], handle: 0x40)  // control (0x001F): notifications
        t.clearLogs()
        // One characteristic's indications keep to one bearer, in order: the first on the fixed
        // bearer, the next two wait there for its confirmation…
        for v: UInt8 in 1...3 { t.take(t.host.notify(characteristic: ATTFixture.notify, value: [v], now: t.now).1) }
        #expect(t.sentFrames(handle: 0x40).filter { $0.channelID == .att }.map(\.payload) == [h("1D 14 00 01")])
        #expect((0x40...0x44).allSatisfy { t.sentPayloads(handle: 0x40, channel: L2CAPChannelID($0)).isEmpty })
        // …another characteristic's goes to a bearer without one outstanding, 0x40…
        t.take(t.host.notify(characteristic: sc, value: [1, 0, 2, 0], now: t.now).1)
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [h("07 00 1D 08 00 01 00 02 00")])
        // …and a notification to the least loaded, 0x40 again (the fixed one has two waiting).
        t.clearLogs()
        let (r, out) = t.host.notify(characteristic: ATTFixture.control, value: [0xAB], now: t.now)
        t.take(out)
        #expect(r == .queued(1))
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x40)) == [h("04 00 1B 1F 00 AB")])
        // A confirmation on 0x40 settles that bearer's indication only…
        t.clearLogs()
        t.receive(Self.kFrame([0x1E]), channel: L2CAPChannelID(0x40), handle: 0x40)
        #expect(t.attEvents == [.indicationConfirmed(ConnectionID(0x40), characteristic: sc)])
        #expect(t.sentFrames(handle: 0x40).allSatisfy { $0.channelID == .leSignalling })  // its credits returned, no PDU
        // …one on the fixed bearer sends the next of its characteristic there.
        t.receive([0x1E], handle: 0x40)
        #expect(t.sentFrames(handle: 0x40).filter { $0.channelID == .att }.map(\.payload) == [h("1D 14 00 02")])
    }

    @Test func theCentralClosingABearerLeavesTheOthers() {
        var t = Self.fiveBearers()
        // Disconnection Request: destination CID 0x41 (ours), source CID 0x41 (the central's).
        t.signal("06 07 04 00 41 00 41 00")
        #expect(t.signalling == [h("07 07 04 00 41 00 41 00")])
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))] + [0x40, 0x42, 0x43, 0x44].map { Self.bearer($0) })
        #expect(t.channelEvents.isEmpty)
        // Its CID is free: a K-frame to it is dropped.
        t.receive(Self.kFrame([0x0A, 0x12, 0x00]), channel: L2CAPChannelID(0x41), handle: 0x40)
        #expect(t.sentPayloads(handle: 0x40, channel: L2CAPChannelID(0x41)).isEmpty)
    }

    @Test func aBearerThatBreaksTheChannelRulesIsClosedInTheCoreToo() {
        var t = Self.fiveBearers()
        // A K-frame on our CID 0x42 announcing a 600-byte SDU, above our MTU 517 (§3.4.3):
        // the channel is disconnected (destination: the central's 0x42, source: ours 0x42)…
        t.receive([0x58, 0x02, 0x0A, 0x12, 0x00], channel: L2CAPChannelID(0x42), handle: 0x40)
        #expect(t.signalling.map { [$0[0]] + Array($0[2...]) } == [h("06 04 00 42 00 42 00")])
        // …and the core's bearer closes with it (not an app channel's event).
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))] + [0x40, 0x41, 0x43, 0x44].map { Self.bearer($0) })
        #expect(t.channelEvents.isEmpty)
        // Once the central answers, CID 0x42 serves a new bearer with its own ATT_MTU.
        t.signal("07 09 04 00 42 00 42 00")
        t.clearLogs()
        t.signal("17 0A 0A 00 27 00 40 00 F7 00 0A 00 45 00")
        #expect(t.signalling == [h("18 0A 0A 00 05 02 F7 00 06 00 00 00 42 00")])
        #expect(t.host.core.att.mtu(for: Self.bearer(0x42)) == 64)
    }

    @Test func anUnconfirmedIndicationClosesItsBearersChannel() {
        var t = Self.fiveBearers()
        t.receive([0x12, 0x15, 0x00, 0x02, 0x00], handle: 0x40)
        t.receive([0x12, 0x09, 0x00, 0x02, 0x00], handle: 0x40)
        t.take(t.host.notify(characteristic: ATTFixture.notify, value: [1], now: t.now).1)  // fixed
        t.receive([0x1E], handle: 0x40)  // confirmed
        t.take(t.host.notify(characteristic: ATTFixture.notify, value: [2], now: t.now).1)  // fixed again (its bearer)
        t.take(t.host.notify(characteristic: GATTDatabase.BuiltIn.serviceChanged.index, value: [1, 0, 2, 0], now: t.now).1)  // 0x40
        t.receive([0x1E], handle: 0x40)
        t.clearLogs()
        t.advance(to: .seconds(31))
        // Transaction timeout on 0x40 (§3.3.3): Disconnection Request for that channel only
        // (destination: the central's CID 0x40, source: ours 0x40); the link stays.
        #expect(t.signalling.map { [$0[0]] + Array($0[2...]) } == [h("06 04 00 40 00 40 00")])
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)) == [.fixed(ConnectionID(0x40))] + (0x41...0x44).map { Self.bearer($0) })
        #expect(t.host.connections[0x40] != nil)
    }

    @Test func reconfigureGrowsTheBearersATTMTU() {
        var t = Self.fiveBearers()
        // MTU 600, MPS 247 for the central's CIDs 0x40 and 0x41.
        t.signal("19 02 08 00 58 02 F7 00 40 00 41 00")
        #expect(t.signalling == [h("1A 02 02 00 00 00")])
        // ATT_MTU: the smaller MTU, now ours (517).
        #expect(t.host.core.att.mtu(for: Self.bearer(0x40)) == 517 && t.host.core.att.mtu(for: Self.bearer(0x41)) == 517)
        #expect(t.host.core.att.mtu(for: Self.bearer(0x42)) == 512)
    }

    @Test func theLinkDroppingForgetsEveryBearer() {
        var t = Self.fiveBearers()
        t.disconnected(0x40)
        #expect(t.host.core.att.bearers(of: ConnectionID(0x40)).isEmpty)
        #expect(t.host.host.channels.eattBearers.isEmpty && t.host.host.creditBasedChannels.isEmpty)
        #expect(t.channelEvents.isEmpty)
    }
}
