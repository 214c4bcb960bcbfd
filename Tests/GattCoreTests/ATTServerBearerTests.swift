import Testing

@testable import GattCore
import GattTestFixtures

/// A client with several ATT bearers (Core Spec Vol 3 Part F §3.2.11, §3.3.2, §3.3.3): the
/// fixed bearer plus Enhanced ATT bearers, each with its own ATT_MTU, transaction, queue and
/// indication flow; CCCDs, change awareness and the prepare queue stay the client's
/// (Vol 3 Part G §2.5.2.1, §3.3.3.3; Vol 3 Part F §3.4.6). Handles: `ATTFixture`.
@Suite struct ATTServerBearerTests {
    /// An EATT channel's CID (dynamic range, Vol 3 Part A §2.1) and its L2CAP MTU.
    static let eattCID: UInt16 = 0x0040
    static let eattMTU = 100

    /// c1 with its fixed bearer and one Enhanced ATT bearer (`e`).
    func twoBearers(configuration: ATTServerConfiguration = ATTServerConfiguration()) -> (ATTHarness, BearerID) {
        var h = ATTHarness(configuration: configuration)
        let e = BearerID(h.c1, channel: Self.eattCID)
        let opened1 = h.server.openBearer(e, mtu: Self.eattMTU)
        #expect(opened1)
        return (h, e)
    }

    @Test func openBearerNeedsAClientAndANewEnhancedChannel() {
        var (h, e) = twoBearers()
        #expect(h.server.bearers(of: h.c1) == [.fixed(h.c1), e])
        let opened2 = h.server.openBearer(e, mtu: 64)
        #expect(!opened2)  // already open
        let opened3 = h.server.openBearer(.fixed(h.c1), mtu: 64)
        #expect(!opened3)  // the fixed bearer comes with the connection
        let opened4 = h.server.openBearer(BearerID(h.c2, channel: 0x0041), mtu: 64)
        #expect(!opened4)  // no such client
        #expect(h.server.mtu(for: e) == Self.eattMTU)
    }

    @Test func aDeferredReadOnOneBearerDoesNotHoldRequestsOnAnother() throws {
        var (h, e) = twoBearers()
        h.server.deferredAccessAvailable = true
        // Read Request of the deferred `control` value on the fixed bearer: it waits.
        #expect(h.send([0x0A, 0x1F, 0x00]) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(1), h.c1, .read(characteristic: ATTFixture.control, offset: 0))])
        // A later request on the fixed bearer is held (one transaction per bearer, §3.3.2)…
        #expect(h.send([0x0A, 0x03, 0x00]) == [])
        // …one on the Enhanced ATT bearer is answered at once, on that bearer.
        let out = h.server.receive([0x0A, 0x12, 0x00], from: e, now: .zero)
        #expect(out == [.outgoingAvailable(e)])
        #expect(h.drain(e) == [[0x0B, 0x01, 0x02]])
        // And a deferred read on the Enhanced bearer waits without blocking anything else.
        #expect(h.send([0x0A, 0x1F, 0x00], on: e) == [])
        #expect(h.events == [.deferredAccess(id: PendingRequestID(2), h.c1, .read(characteristic: ATTFixture.control, offset: 0))])
        // Each answer goes to the bearer its request came on, then its held PDUs are processed.
        let first = try h.server.respond(to: PendingRequestID(1), result: .success([0xAA]), now: .seconds(1))
        #expect(first == [.outgoingAvailable(.fixed(h.c1))])
        #expect(h.drain(h.c1) == [[0x0B, 0xAA], [0x0B] + Array("gattd".utf8)])
        #expect(h.drain(e) == [])
        _ = try h.server.respond(to: PendingRequestID(2), result: .success([0xBB]), now: .seconds(1))
        #expect(h.drain(e) == [[0x0B, 0xBB]])
    }

    @Test func eachBearerHasItsOwnATTMTUAndExchangeMTUOnlyOnTheFixedOne() {
        var (h, e) = twoBearers()
        h.exchangeMTU(50)
        #expect(h.server.mtu(for: h.c1) == 50)
        #expect(h.server.mtu(for: e) == Self.eattMTU)
        // Read of the 100-byte `long` value: ATT_MTU-1 octets of it on each bearer.
        #expect(h.request([0x0A, 0x1B, 0x00]) == [0x0B] + (0..<49).map { UInt8($0) })
        #expect(h.request([0x0A, 0x1B, 0x00], on: e) == [0x0B] + (0..<99).map { UInt8($0) })
        // Exchange MTU on an Enhanced ATT bearer (Vol 3 Part G §4.3.1): Request Not Supported.
        #expect(h.request([0x02, 0x00, 0x02], on: e) == [0x01, 0x02, 0x00, 0x00, 0x06])
        #expect(h.server.mtu(for: e) == Self.eattMTU)
        // A channel reconfigured to a larger MTU (never smaller) gives its bearer that ATT_MTU.
        let shrunk = h.server.reconfigureBearer(e, mtu: 64)
        let grown = h.server.reconfigureBearer(e, mtu: 200)
        let fixed = h.server.reconfigureBearer(.fixed(h.c1), mtu: 200)
        #expect(!shrunk && grown && !fixed)
        #expect(h.request([0x0A, 0x1B, 0x00], on: e) == [0x0B] + (0..<100).map { UInt8($0) })
        #expect(h.server.mtu(for: h.c1) == 50)
    }

    @Test func aCCCDWrittenOnOneBearerAppliesToUpdatesOnAnyBearer() {
        var (h, e) = twoBearers()
        #expect(h.request([0x12, 0x15, 0x00, 0x01, 0x00], on: e) == [0x13])
        #expect(h.events == [.subscriptionChanged(h.c1, characteristic: ATTFixture.notify, notify: true, indicate: false)])
        // The fixed bearer reads the client's CCCD value.
        #expect(h.request([0x0A, 0x15, 0x00]) == [0x0B, 0x01, 0x00])
        // A notification goes to the least loaded bearer, the fixed one on a tie…
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [1], now: .zero).outputs == [.outgoingAvailable(.fixed(h.c1))])
        // …the next of the same characteristic to the same bearer, so they keep their order…
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [2], now: .zero).outputs == [.outgoingAvailable(.fixed(h.c1))])
        // …and another characteristic's first to the least loaded, the Enhanced one.
        #expect(h.request([0x12, 0x20, 0x00, 0x01, 0x00], on: e) == [0x13])
        #expect(h.server.notify(characteristic: ATTFixture.control, value: [3], now: .zero).outputs == [.outgoingAvailable(e)])
        #expect(h.drain(h.c1) == [[0x1B, 0x14, 0x00, 1], [0x1B, 0x14, 0x00, 2]])
        #expect(h.drain(e) == [[0x1B, 0x1F, 0x00, 3]])
        #expect(h.server.queuedUpdates(for: h.c1) == 0)
    }

    @Test func eachBearerHasItsOwnIndicationTransaction() {
        var (h, e) = twoBearers()
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        h.subscribe(0x15, 0x02, from: h.c1)
        h.subscribe(0x09, 0x02, from: h.c1)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: .zero)
        #expect(h.drain(h.c1) == [[0x1D, 0x14, 0x00, 1]])
        // The fixed bearer's indication is outstanding: another characteristic's goes out on the other bearer…
        _ = h.server.notify(characteristic: sc, value: [1, 0, 2, 0], now: .zero)
        #expect(h.drain(e) == [[0x1D, 0x08, 0x00, 1, 0, 2, 0]])
        // …while the first characteristic's next waits behind its own on the fixed bearer (its order).
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [3], now: .zero)
        #expect(h.drain(h.c1) == [] && h.drain(e) == [])
        // A confirmation is matched to its own bearer's indication.
        #expect(h.server.receive([0x1E], from: e, now: .seconds(1)) == [.event(.indicationConfirmed(h.c1, characteristic: sc))])
        #expect(h.drain(e) == [])
        _ = h.server.receive([0x1E], from: .fixed(h.c1), now: .seconds(1))
        #expect(h.drain(h.c1) == [[0x1D, 0x14, 0x00, 3]])
    }

    @Test func anUnconfirmedIndicationClosesOnlyItsEnhancedBearer() {
        var (h, e) = twoBearers()
        let sc = GATTDatabase.BuiltIn.serviceChanged.index
        h.subscribe(0x15, 0x02)
        h.subscribe(0x09, 0x02)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [1], now: .seconds(10))
        _ = h.server.notify(characteristic: sc, value: [1, 0, 1, 0], now: .seconds(20))  // on e
        _ = h.server.notify(characteristic: sc, value: [2, 0, 2, 0], now: .seconds(20))  // waits on e
        #expect(h.drain(e) == [[0x1D, 0x08, 0x00, 1, 0, 1, 0]])
        _ = h.server.receive([0x1E], from: .fixed(h.c1), now: .seconds(21))
        #expect(h.server.nextDeadline == .seconds(50))
        // e's indication times out: e closes, and the indication waiting there goes out on
        // the fixed bearer (with a new transaction timer).
        #expect(h.server.tick(now: .seconds(50)) == [
            .event(.indicationTimedOut(h.c1, characteristic: sc)),
            .outgoingAvailable(.fixed(h.c1)),
            .closeBearer(e, .transactionTimeout),
        ])
        #expect(h.server.connections == [h.c1])
        #expect(h.server.bearers(of: h.c1) == [.fixed(h.c1)])
        #expect(h.drain(h.c1) == [[0x1D, 0x14, 0x00, 1], [0x1D, 0x08, 0x00, 2, 0, 2, 0]])
        #expect(h.server.nextDeadline == .seconds(80))
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
    }

    @Test func changeAwarenessIsTheClientsOnEveryBearer() {
        var (h, e) = twoBearers()
        #expect(h.request([0x12, 0x0B, 0x00, 0x01]) == [0x13])  // Robust Caching
        h.server.databaseChanged(from: [1, 2, 3], range: .all)
        // Change-unaware on both bearers: Database Out Of Sync on each.
        #expect(h.request([0x0A, 0x12, 0x00], on: e) == [0x01, 0x0A, 0x00, 0x00, 0x12])
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x01, 0x0A, 0x00, 0x00, 0x12])
        // With more than one bearer, Out Of Sync then a request does not make it aware (§2.5.2.1)…
        #expect(h.request([0x0A, 0x12, 0x00], on: e) == [0x01, 0x0A, 0x00, 0x00, 0x12])
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnawareOutOfSyncSent)
        // …reading the Database Hash on one bearer and a request on another does.
        let hash = h.server.database.databaseHash
        #expect(h.request([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B], on: e) == [0x09, 18, 0x0D, 0x00] + hash)
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
        #expect(h.server.changeAwareness(for: h.c1) == .changeAware)
        #expect(h.request([0x0A, 0x12, 0x00], on: e) == [0x0B, 0x01, 0x02])
    }

    @Test func aServiceChangedConfirmationMakesAClientWithSeveralBearersAwareNoMore() {
        var (h, _) = twoBearers()
        h.subscribe(0x09, 0x02)
        h.server.databaseChanged(from: [1], range: .all)
        _ = h.server.indicateServiceChangedOwed(h.c1, now: .zero)
        #expect(h.drain(h.c1) == [[0x1D, 0x08, 0x00, 0x01, 0x00, 0xFF, 0xFF]])
        _ = h.server.receive([0x1E], from: .fixed(h.c1), now: .zero)
        // Settled (nothing owed), but change-aware only with exactly one bearer (§2.5.2.1).
        #expect(h.server.clientState(for: h.c1)?.serviceChangedOwed == nil)
        #expect(h.server.changeAwareness(for: h.c1) == .changeUnaware)
    }

    @Test func thePrepareQueueIsTheClients() {
        var (h, e) = twoBearers()
        // Prepared on the Enhanced bearer, executed on the fixed one (Vol 3 Part F §3.4.6).
        #expect(h.request([0x16, 0x12, 0x00, 0x00, 0x00, 0x07], on: e) == [0x17, 0x12, 0x00, 0x00, 0x00, 0x07])
        #expect(h.request([0x18, 0x01]) == [0x19])
        #expect(h.server.database.value(ofCharacteristic: ATTFixture.rw) == [0x07])
    }

    @Test func closingAnEnhancedBearerLeavesTheClientAndItsFixedBearer() {
        var (h, e) = twoBearers()
        h.server.deferredAccessAvailable = true
        h.subscribe(0x15, 0x01)
        #expect(h.send([0x0A, 0x1F, 0x00], on: e) == [])
        #expect(h.server.bearer(waitingOn: PendingRequestID(1)) == e)
        #expect(h.server.closeBearer(e, now: .zero) == [])
        #expect(h.server.bearer(waitingOn: PendingRequestID(1)) == nil)
        #expect(h.server.bearers(of: h.c1) == [.fixed(h.c1)])
        #expect(h.server.mtu(for: e) == nil)
        // Its deferred access is gone; PDUs on it are ignored.
        #expect(throws: ATTRespondError.unknownRequest) { try h.server.respond(to: PendingRequestID(1), result: .success([]), now: .zero) }
        #expect(h.server.receive([0x0A, 0x12, 0x00], from: e, now: .zero) == [])
        // The client keeps its state and its fixed bearer.
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x01, 0x02])
        #expect(h.server.clientConfiguration(for: h.c1, characteristic: ATTFixture.notify) == 0x0001)
        #expect(h.server.notify(characteristic: ATTFixture.notify, value: [9], now: .zero).outputs == [.outgoingAvailable(.fixed(h.c1))])
        #expect(h.server.bearers.pendingRequests.isEmpty)
        // The channel may be opened again.
        let opened5 = h.server.openBearer(e, mtu: 64)
        #expect(opened5)
    }

    @Test func aRequestBeforeTheAnswerToThePreviousOneLeftIsIgnoredOnThatBearer() {
        var (h, e) = twoBearers()
        // Two Read Requests on the Enhanced bearer without the first answer pulled (a client
        // pipelining, against §3.3.2): the second is ignored, so the queue stays bounded.
        #expect(h.server.receive([0x0A, 0x12, 0x00], from: e, now: .zero) == [.outgoingAvailable(e)])
        #expect(h.server.receive([0x0C, 0x12, 0x00, 0x00, 0x00], from: e, now: .zero) == [])
        // A command still counts, and the other bearer is not held up.
        h.absorb(h.server.receive([0x52, 0x12, 0x00, 0x07], from: e, now: .zero))
        #expect(h.request([0x0A, 0x12, 0x00]) == [0x0B, 0x07])
        #expect(h.drain(e) == [[0x0B, 0x01, 0x02]])
        // Once the answer has left, the next request is served.
        #expect(h.send([0x0A, 0x12, 0x00], on: e) == [[0x0B, 0x07]])
        // Queued notifications do not count as an answer owed.
        h.subscribe(0x15, 0x01)
        _ = h.server.notify(characteristic: ATTFixture.notify, value: [9], now: .zero)
        #expect(h.send([0x0A, 0x12, 0x00], on: .fixed(h.c1)).count == 2)
    }

    @Test func disconnectingTheClientClosesAllItsBearers() {
        var (h, e) = twoBearers()
        let e2 = BearerID(h.c1, channel: 0x0041)
        let opened6 = h.server.openBearer(e2, mtu: 64)
        #expect(opened6)
        h.server.deferredAccessAvailable = true
        #expect(h.send([0x0A, 0x1F, 0x00], on: e2) == [])
        _ = h.server.disconnect(h.c1)
        #expect(h.server.bearers.isEmpty && h.server.clients.isEmpty && h.server.bearers.pendingRequests.isEmpty)
        #expect(h.server.bearers(of: h.c1) == [])
        #expect(h.server.receive([0x0A, 0x12, 0x00], from: e, now: .zero) == [])
        let opened7 = h.server.openBearer(e, mtu: 64)
        #expect(!opened7)
        #expect(h.server.nextDeadline == nil)
    }
}

extension ATTHarness {
    /// Sends a PDU on a bearer and returns every PDU the server queued on that bearer.
    mutating func send(_ pdu: [UInt8], on bearer: BearerID, now: Duration = .zero) -> [[UInt8]] {
        events = []
        absorb(server.receive(pdu, from: bearer, now: now))
        return drain(bearer)
    }

    /// Sends a PDU on a bearer that must be answered by exactly one PDU, and returns it.
    mutating func request(_ pdu: [UInt8], on bearer: BearerID, now: Duration = .zero) -> [UInt8] {
        let out = send(pdu, on: bearer, now: now)
        return out.count == 1 ? out[0] : [0xEE, UInt8(truncatingIfNeeded: out.count)]
    }

    mutating func drain(_ bearer: BearerID) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let (pdu, outputs) = server.dequeueOutgoing(for: bearer) {
            out.append(pdu)
            absorb(outputs)
        }
        return out
    }
}
