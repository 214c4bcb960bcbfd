import Testing

@testable import GattCore
import GattTestFixtures

/// Updates of one characteristic to one client arrive in the order they were submitted,
/// whatever ATT bearers the client has open (issue #30; Core Spec Vol 3 Part F §3.2.11 lets a
/// server send a notification on any bearer, but the client's application sees one stream
/// per characteristic). A bearer whose queue is not drained here is one the transport holds
/// back (an L2CAP channel waiting for credits); "arrival" is the order the bearers are
/// drained in, a held-back one last.
@Suite struct ATTServerUpdateOrderTests {
    /// a and b notify and indicate, c notifies.
    static func database() -> GATTDatabase {
        GATTDatabase(
            deviceName: "gattd", appearance: 0,
            services: [
                ServiceDefinition(
                    id: "s", uuid: 0xBBB0,
                    characteristics: [
                        CharacteristicDefinition(id: "a", uuid: 0xBBB1, properties: [.read, .notify, .indicate], value: [], maxLength: 100),
                        CharacteristicDefinition(id: "b", uuid: 0xBBB2, properties: [.read, .notify, .indicate], value: [], maxLength: 100),
                        CharacteristicDefinition(id: "c", uuid: 0xBBB3, properties: [.notify], value: [], maxLength: 100),
                    ])
            ])
    }

    static let a = CharacteristicIndex(GATTDatabase.BuiltIn.count)
    static let b = CharacteristicIndex(GATTDatabase.BuiltIn.count + 1)
    static let c = CharacteristicIndex(GATTDatabase.BuiltIn.count + 2)

    var h: ATTHarness
    let fixed: BearerID
    let e1: BearerID, e2: BearerID, e3: BearerID

    /// c1 with its fixed bearer (ATT_MTU 23) and three Enhanced ATT bearers (ATT_MTU 100).
    init() {
        h = ATTHarness()
        h.server = ATTServer(database: Self.database())
        h.server.connect(h.c1, security: .low)
        fixed = .fixed(h.c1)
        (e1, e2, e3) = (BearerID(h.c1, channel: 0x40), BearerID(h.c1, channel: 0x41), BearerID(h.c1, channel: 0x42))
        for e in [e1, e2, e3] { _ = h.server.openBearer(e, mtu: 100) }
    }

    func handle(_ c: CharacteristicIndex) -> AttributeHandle { h.server.database[c].valueHandle }

    /// Writes `c`'s CCCD (1 notify, 2 indicate) on the fixed bearer.
    mutating func subscribe(_ c: CharacteristicIndex, _ bits: UInt8) {
        let cccd = h.server.database[c].cccdHandle!.rawValue
        #expect(h.request([0x12, UInt8(cccd & 0xFF), UInt8(cccd >> 8), bits, 0x00]) == [0x13])
    }

    mutating func notify(_ c: CharacteristicIndex, _ value: [UInt8], now: Duration = .zero) {
        let r = h.server.notify(characteristic: c, value: value, now: now).result
        #expect(r == .queued(1))
    }

    /// The notification (0x1B) or indication (0x1D) of `c` with `value`.
    func pdu(_ opcode: UInt8, _ c: CharacteristicIndex, _ value: [UInt8]) -> [UInt8] {
        [opcode, UInt8(handle(c).rawValue & 0xFF), UInt8(handle(c).rawValue >> 8)] + value
    }

    /// The first value octet of each update of `c` among `pdus`, in order.
    func sequence(of c: CharacteristicIndex, in pdus: [[UInt8]]) -> [UInt8] {
        let lo = UInt8(handle(c).rawValue & 0xFF)
        return pdus.filter { $0.count > 3 && ($0[0] == 0x1B || $0[0] == 0x1D) && $0[1] == lo }.map { $0[3] }
    }

    @Test mutating func aBurstOfOneCharacteristicKeepsToTheBearerItsFirstTook() {
        subscribe(Self.a, 0x01)
        // Nothing drained: the fixed bearer is held back, the Enhanced ones idle. Every
        // notification of a still goes where its first went (least loaded would spread them).
        for v: UInt8 in 1...10 { notify(Self.a, [v]) }
        #expect(h.drain(e1) == [] && h.drain(e2) == [] && h.drain(e3) == [])
        #expect(h.drain(fixed) == (1...10).map { pdu(0x1B, Self.a, [$0]) })
    }

    @Test mutating func aBurstOnAHeldBackEnhancedBearerWaitsForIt() {
        subscribe(Self.a, 0x01)
        subscribe(Self.c, 0x01)
        notify(Self.c, [0xC0])  // the fixed bearer is loaded…
        notify(Self.a, [1])  // …so a's first goes to the least loaded, e1
        #expect(h.drain(fixed) == [pdu(0x1B, Self.c, [0xC0])])
        // e1 is held back (no credits): a's next ones queue behind it, not on the idle bearers.
        for v: UInt8 in 2...20 { notify(Self.a, [v]) }
        let arrived = h.drain(fixed) + h.drain(e2) + h.drain(e3) + h.drain(e1)
        #expect(sequence(of: Self.a, in: arrived) == Array(1...20))
        #expect(h.server.queuedUpdates(for: h.c1) == 0)
    }

    @Test mutating func twoCharacteristicsInterleavedEachKeepTheirOrderOnTheirOwnBearers() {
        subscribe(Self.a, 0x01)
        subscribe(Self.b, 0x01)
        var arrived: [[UInt8]] = []
        for v: UInt8 in 1...12 {
            notify(Self.a, [v])
            notify(Self.b, [v])
            // The bearers drain at different paces: e1 every third round, the rest at the end.
            if v % 3 == 0 { arrived += h.drain(e1) }
        }
        arrived += h.drain(e3) + h.drain(e2) + h.drain(e1) + h.drain(fixed)
        #expect(sequence(of: Self.a, in: arrived) == Array(1...12))
        #expect(sequence(of: Self.b, in: arrived) == Array(1...12))
        // Spread where it is safe: a took the fixed bearer (a tie), b the least loaded then, e1.
        #expect(h.server.bearers.updateChannels(of: h.c1) == [Self.a: BearerID.fixedATTChannel, Self.b: e1.channel])
    }

    @Test mutating func indicationsOfOneCharacteristicWaitOnItsBearerInOrder() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.a, [1])  // fixed: outstanding
        notify(Self.a, [2])  // waits behind it (not on an idle bearer: it could overtake a1)
        notify(Self.a, [3])
        notify(Self.b, [1])  // another characteristic: a bearer without one outstanding, e1
        #expect(h.drain(e2) == [] && h.drain(e3) == [])
        #expect(h.drain(e1) == [pdu(0x1D, Self.b, [1])])
        #expect(h.drain(fixed) == [pdu(0x1D, Self.a, [1])])
        // b's confirmation lets nothing of a out; each of a's confirmations lets its next out.
        #expect(h.server.receive([0x1E], from: e1, now: .zero) == [.event(.indicationConfirmed(h.c1, characteristic: Self.b))])
        #expect(h.drain(e1) == [] && h.drain(fixed) == [])
        _ = h.server.receive([0x1E], from: fixed, now: .zero)
        #expect(h.drain(fixed) == [pdu(0x1D, Self.a, [2])])
        _ = h.server.receive([0x1E], from: fixed, now: .zero)
        #expect(h.drain(fixed) == [pdu(0x1D, Self.a, [3])])
    }

    @Test mutating func aMultipleHandleValueNotificationGoesToTheBearerOfItsValues() {
        subscribe(Self.a, 0x01)
        subscribe(Self.b, 0x01)
        subscribe(Self.c, 0x01)
        #expect(h.request([0x12, 0x0B, 0x00, 0x04]) == [0x13])  // Client Supported Features: bit 2
        let (ha, hb) = (handle(Self.a).rawValue, handle(Self.b).rawValue)
        func multi(_ values: [(UInt16, UInt8)]) -> [UInt8] {
            [0x23] + values.flatMap { [UInt8($0.0 & 0xFF), UInt8($0.0 >> 8), 1, 0, $0.1] }
        }
        // a and b have no bearer yet: together on one (the fixed one, a tie), which both keep.
        _ = h.server.notifyMultiple([(Self.a, [1]), (Self.b, [1])], now: .zero)
        notify(Self.c, [1])  // c's first: the least loaded, e1
        // a (fixed) and c (e1) are on different bearers: one notification on each, in order.
        let r = h.server.notifyMultiple([(Self.a, [2]), (Self.c, [2])], now: .zero).result
        #expect(r == .queued(1))
        // b joins a on the fixed bearer, so they share one PDU again.
        _ = h.server.notifyMultiple([(Self.a, [3]), (Self.b, [3])], now: .zero)
        #expect(h.drain(e2) == [] && h.drain(e3) == [])
        #expect(h.drain(e1) == [pdu(0x1B, Self.c, [1]), pdu(0x1B, Self.c, [2])])
        #expect(h.drain(fixed) == [multi([(ha, 1), (hb, 1)]), pdu(0x1B, Self.a, [2]), multi([(ha, 3), (hb, 3)])])
    }

    @Test mutating func aBearerClosedMidBurstMovesWhatItHadQueuedInOrder() {
        subscribe(Self.a, 0x01)
        subscribe(Self.c, 0x01)
        notify(Self.c, [0xC0])
        notify(Self.a, [1] + Array(repeating: 0xAA, count: 49))  // on e1 (the fixed one is loaded)
        #expect(h.drain(fixed).count == 1)
        #expect(h.drain(e1) == [pdu(0x1B, Self.a, [1] + Array(repeating: 0xAA, count: 49))])  // sent
        for v: UInt8 in 2...6 { notify(Self.a, [v] + Array(repeating: 0xAA, count: 49)) }  // queued on e1
        #expect(h.server.queuedUpdates(for: e1) == 5)
        // The central closes e1: its five queued notifications go, in order, to the least
        // loaded bearer (the fixed one, a tie), cut to its ATT_MTU (23: 20 octets of value)…
        #expect(h.server.closeBearer(e1, now: .zero) == [.outgoingAvailable(.fixed(h.c1))])
        #expect(h.server.queuedUpdates(for: h.c1) == 5)
        // …and a's later ones follow them there.
        notify(Self.a, [7] + Array(repeating: 0xAA, count: 49))
        let arrived = h.drain(e2) + h.drain(e3) + h.drain(fixed)
        #expect(arrived == (2...7).map { pdu(0x1B, Self.a, [$0] + Array(repeating: 0xAA, count: 19)) })
    }

    @Test mutating func aBearerClosedWithIndicationsWaitingMovesThem() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.b, [0xB0])  // fixed: outstanding
        notify(Self.a, [1])  // e1: outstanding…
        #expect(h.drain(e1) == [pdu(0x1D, Self.a, [1])])
        notify(Self.a, [2])  // …a2 and a3 wait behind it
        notify(Self.a, [3])
        // e1 closes before a1 is confirmed: a1 went out (it is not sent again: reported
        // unconfirmed), a2 and a3 go to a bearer without an indication outstanding (e2), a2 at
        // once, a3 after its confirmation.
        #expect(h.server.closeBearer(e1, now: .seconds(1)) == [
            .event(.indicationUnconfirmed(h.c1, characteristic: Self.a)), .outgoingAvailable(e2),
        ])
        #expect(h.drain(e2) == [pdu(0x1D, Self.a, [2])])
        #expect(h.server.nextDeadline == .seconds(30))  // b's on the fixed bearer; a2's at 31
        #expect(h.server.receive([0x1E], from: e2, now: .seconds(2)) == [
            .event(.indicationConfirmed(h.c1, characteristic: Self.a)), .outgoingAvailable(e2),
        ])
        #expect(h.drain(e2) == [pdu(0x1D, Self.a, [3])])
        #expect(h.drain(fixed) == [pdu(0x1D, Self.b, [0xB0])])
    }

    // MARK: An indication its closed bearer took with it

    @Test mutating func aBearerClosedWithItsIndicationSentReportsItUnconfirmedOnce() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.b, [0xB0])  // fixed: outstanding
        notify(Self.a, [1])  // e1: outstanding, and sent
        #expect(h.drain(e1) == [pdu(0x1D, Self.a, [1])])
        // Nothing else was queued on e1: only the report.
        #expect(h.server.closeBearer(e1, now: .seconds(1)) == [.event(.indicationUnconfirmed(h.c1, characteristic: Self.a))])
        #expect(h.server.closeBearer(e1, now: .seconds(2)) == [])  // closed already: no second report
        #expect(h.server.nextDeadline == .seconds(30))  // b's alone: a1's timer went with e1
        // a's next indication goes out at once on another bearer.
        notify(Self.a, [2], now: .seconds(3))
        #expect(h.drain(e2) == [pdu(0x1D, Self.a, [2])])
    }

    @Test mutating func aBearerClosedBeforeTheTransportTookItsIndicationMovesItUnreported() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.b, [0xB0])  // fixed: outstanding
        notify(Self.a, [1])  // e1: outstanding, still in e1's queue (held back)
        // Never sent: it is sent on e2 instead, and a confirmation may still come.
        #expect(h.server.closeBearer(e1, now: .seconds(1)) == [.outgoingAvailable(e2)])
        #expect(h.drain(e2) == [pdu(0x1D, Self.a, [1])])
        #expect(h.server.receive([0x1E], from: e2, now: .seconds(2)) == [.event(.indicationConfirmed(h.c1, characteristic: Self.a))])
    }

    @Test mutating func aBearerClosedAfterItsIndicationWasConfirmedReportsNothing() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.b, [0xB0])
        notify(Self.a, [1])
        #expect(h.drain(e1) == [pdu(0x1D, Self.a, [1])])
        _ = h.server.receive([0x1E], from: e1, now: .seconds(1))
        #expect(h.server.closeBearer(e1, now: .seconds(2)) == [])
    }

    @Test mutating func anIndicationThatTimedOutOnAnEnhancedBearerIsReportedOnceAsTimedOut() {
        subscribe(Self.a, 0x02)
        subscribe(Self.b, 0x02)
        notify(Self.b, [0xB0], now: .seconds(10))  // fixed: its deadline is later
        notify(Self.a, [1])
        #expect(h.drain(e1) == [pdu(0x1D, Self.a, [1])])
        #expect(h.server.tick(now: .seconds(30)) == [
            .event(.indicationTimedOut(h.c1, characteristic: Self.a)), .closeBearer(e1, .transactionTimeout),
        ])
        // The transport then reports the channel closed: nothing more (the timeout said it).
        #expect(h.server.closeBearer(e1, now: .seconds(31)) == [])
    }

    @Test mutating func aMultipleHandleValueNotificationThatNoLongerFitsIsSplitWhenMoved() {
        subscribe(Self.a, 0x01)
        subscribe(Self.b, 0x01)
        subscribe(Self.c, 0x01)
        #expect(h.request([0x12, 0x0B, 0x00, 0x04]) == [0x13])
        notify(Self.c, [0xC0])  // loads the fixed bearer
        let long = Array(repeating: UInt8(0x11), count: 30)
        _ = h.server.notifyMultiple([(Self.a, long), (Self.b, long)], now: .zero)  // 69 octets on e1
        #expect(h.server.queuedUpdates(for: e1) == 1)
        _ = h.drain(fixed)
        _ = h.server.closeBearer(e1, now: .zero)
        // On the fixed bearer (ATT_MTU 23) it becomes one notification per value, each cut to 20.
        #expect(h.drain(fixed) == [pdu(0x1B, Self.a, Array(long.prefix(20))), pdu(0x1B, Self.b, Array(long.prefix(20)))])
    }

    @Test mutating func aReloadKeepsEachCharacteristicOnItsBearer() {
        subscribe(Self.a, 0x01)
        subscribe(Self.c, 0x01)
        notify(Self.c, [0xC0])
        notify(Self.a, [1])  // e1
        _ = h.server.replaceDatabase(Self.database(), now: .zero)
        notify(Self.a, [2])
        #expect(h.drain(e1) == [pdu(0x1B, Self.a, [1]), pdu(0x1B, Self.a, [2])])
    }
}
