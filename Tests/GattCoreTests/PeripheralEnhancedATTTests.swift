import Testing
@testable import GattCore
import GattTestFixtures

/// The Peripheral routing Enhanced ATT bearers (the EATT seam): opened, fed, pumped one PDU
/// per `.readyToSend` of that bearer, reconfigured, closed, forgotten with the connection.
@Suite struct PeripheralEnhancedATTTests {
    static let a = PeripheralTests.a
    static let e1 = BearerID(PeripheralTests.a, channel: 0x0040)
    static let e2 = BearerID(PeripheralTests.a, channel: 0x0041)
    var core = Peripheral(database: ATTFixture.database(), payloads: PeripheralTests.payloads, maxConnections: 2)

    mutating func connectedWithTwoBearers() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        _ = core.handle(.connected(Self.a, PeripheralTests.centralA), now: .zero)
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        #expect(core.handle(.enhancedBearer(Self.e1, .opened(mtu: 100)), now: .zero) == [])
        #expect(core.handle(.enhancedBearer(Self.e2, .opened(mtu: 64)), now: .zero) == [])
        #expect(core.att.bearers(of: Self.a) == [.fixed(Self.a), Self.e1, Self.e2])
        #expect(core.att.mtu(for: Self.e1) == 100)
    }

    @Test mutating func aRequestOnABearerIsAnsweredOnItAfterItsReadyToSend() {
        connectedWithTwoBearers()
        let out = core.handle(.received(Self.e1, [0x0A, 0x12, 0x00]), now: .zero)
        #expect(out.isEmpty, "no room on e1 yet: the fixed bearer's readiness does not count")
        #expect(PeripheralTests.sends(core.handle(.readyToSend(Self.e2), now: .zero)).isEmpty)
        let sent = PeripheralTests.sends(core.handle(.readyToSend(Self.e1), now: .zero))
        #expect(sent.count == 1 && sent[0].0 == Self.e1 && sent[0].1 == [0x0B, 0x01, 0x02])
        // e2 stays ready: its response leaves at once, on e2 alone (not on the fixed bearer).
        let out2 = core.handle(.received(Self.e2, [0x0A, 0x12, 0x00]), now: .zero)
        #expect(PeripheralTests.sends(out2).map(\.0) == [Self.e2])
    }

    @Test mutating func onePDUPerReadyToSend() {
        connectedWithTwoBearers()
        _ = core.handle(.received(Self.e1, [0x0A, 0x12, 0x00]), now: .zero)
        _ = core.handle(.readyToSend(Self.e1), now: .zero)
        _ = core.handle(.received(Self.e1, [0x0A, 0x03, 0x00]), now: .zero)
        _ = core.handle(.received(Self.e1, [0x0A, 0x05, 0x00]), now: .zero)
        let next = PeripheralTests.sends(core.handle(.readyToSend(Self.e1), now: .zero))
        #expect(next.map(\.1) == [[0x0B] + Array("gattd".utf8)])
    }

    @Test mutating func reconfigureGrowsTheBearersMTU() {
        connectedWithTwoBearers()
        _ = core.handle(.enhancedBearer(Self.e2, .reconfigured(mtu: 200)), now: .zero)
        #expect(core.att.mtu(for: Self.e2) == 200)
    }

    @Test mutating func aClosedBearerIsForgottenAndItsReadinessToo() {
        connectedWithTwoBearers()
        _ = core.handle(.readyToSend(Self.e1), now: .zero)
        _ = core.handle(.enhancedBearer(Self.e1, .closed), now: .zero)
        #expect(core.att.bearers(of: Self.a) == [.fixed(Self.a), Self.e2])
        #expect(core.handle(.received(Self.e1, [0x0A, 0x12, 0x00]), now: .zero) == [])
        #expect(!core.readyBearers.contains(Self.e1))
    }

    @Test mutating func aBearerOfAnUnknownConnectionOrTheFixedChannelIsIgnored() {
        _ = core.handle(.ready(address: PeripheralTests.address, description: "test"), now: .zero)
        #expect(core.handle(.enhancedBearer(Self.e1, .opened(mtu: 100)), now: .zero) == [])
        #expect(core.att.bearers(of: Self.a) == [])
        _ = core.handle(.connected(Self.a, PeripheralTests.centralA), now: .zero)
        #expect(core.handle(.enhancedBearer(.fixed(Self.a), .opened(mtu: 100)), now: .zero) == [])
        #expect(core.att.bearers(of: Self.a) == [.fixed(Self.a)])
    }

    @Test mutating func anUnconfirmedIndicationOnAnEnhancedBearerClosesThatChannelOnly() {
        connectedWithTwoBearers()
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x15, 0x00, 0x02, 0x00]), now: .zero)  // indications on
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x09, 0x00, 0x02, 0x00]), now: .zero)  // Service Changed's too
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        // The first indication takes the fixed bearer; another characteristic's goes to a bearer without one outstanding.
        let first = core.notify(characteristic: ATTFixture.notify, value: [1], now: .zero).1
        #expect(PeripheralTests.sends(first).map(\.0) == [.fixed(Self.a)])
        #expect(PeripheralTests.sends(first).map(\.1) == [[0x1D, 0x14, 0x00, 0x01]])
        let (r, out) = core.notify(characteristic: GATTDatabase.BuiltIn.serviceChanged.index, value: [1, 0, 2, 0], now: .zero)
        #expect(r == .queued(1))
        #expect(PeripheralTests.sends(out).isEmpty)
        let sent = PeripheralTests.sends(core.handle(.readyToSend(Self.e1), now: .zero))
        #expect(sent.map(\.1) == [[0x1D, 0x08, 0x00, 1, 0, 2, 0]])
        // The fixed bearer's indication is confirmed; e1's never is.
        _ = core.handle(.received(.fixed(Self.a), [0x1E]), now: .seconds(1))
        let timeout = core.tick(now: .seconds(31))
        #expect(timeout.contains(.closeEnhancedBearer(Self.e1)))
        #expect(!timeout.contains { if case .disconnect = $0 { true } else { false } })
    }

    /// §3.3.3: an unconfirmed indication on the unenhanced bearer closes it, and it closes
    /// with its connection: the link goes, not a channel.
    @Test mutating func anIndicationTimeoutOnTheUnenhancedBearerClosesTheLink() {
        connectedWithTwoBearers()
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x15, 0x00, 0x02, 0x00]), now: .zero)  // indications on
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        let first = core.notify(characteristic: ATTFixture.notify, value: [1], now: .zero).1
        #expect(PeripheralTests.sends(first).map(\.0) == [.fixed(Self.a)])
        let timeout = core.tick(now: .seconds(31))
        #expect(timeout.contains(.disconnect(Self.a, reason: .remoteUserTerminatedConnection)))
        #expect(!timeout.contains { if case .closeEnhancedBearer = $0 { true } else { false } })
    }

    @Test mutating func readinessOfABearerNotOpenIsIgnored() {
        connectedWithTwoBearers()
        let unopened = BearerID(Self.a, channel: 0x0042)
        #expect(core.handle(.readyToSend(unopened), now: .zero) == [])
        #expect(!core.readyBearers.contains(unopened))
        #expect(core.handle(.readyToSend(.fixed(ConnectionID(0x99))), now: .zero) == [])
        #expect(core.readyBearers.allSatisfy { $0.connection == Self.a })
    }

    @Test mutating func aDisconnectionForgetsTheConnectionsBearers() {
        connectedWithTwoBearers()
        _ = core.handle(.readyToSend(Self.e1), now: .zero)
        _ = core.handle(.disconnected(Self.a, reason: .remoteUserTerminatedConnection), now: .zero)
        #expect(core.readyBearers.isEmpty)
        #expect(core.att.bearers(of: Self.a) == [])
    }

    @Test mutating func notifyWithSeveralValuesReachesEachSubscriber() {
        connectedWithTwoBearers()
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x15, 0x00, 0x01, 0x00]), now: .zero)
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x20, 0x00, 0x01, 0x00]), now: .zero)
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        _ = core.handle(.received(.fixed(Self.a), [0x12, 0x0B, 0x00, 0x04]), now: .zero)
        _ = core.handle(.readyToSend(.fixed(Self.a)), now: .zero)
        let (r, out) = core.notify(values: [(ATTFixture.notify, [0xAA]), (ATTFixture.control, [0xBB])], now: .zero)
        #expect(r == .queued(1))
        let sent = PeripheralTests.sends(out) + PeripheralTests.sends(core.handle(.readyToSend(.fixed(Self.a)), now: .zero))
        #expect(sent.map(\.1) == [[0x23, 0x14, 0x00, 0x01, 0x00, 0xAA, 0x1F, 0x00, 0x01, 0x00, 0xBB]])
    }
}
