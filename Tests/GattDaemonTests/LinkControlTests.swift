import GattControlProtocol
import GattCore
@testable import GattDaemon
import Logging
import NIOCore
import NIOPosix
import Testing

/// `connection_parameters` and `phy` in the daemon: the reply waits for each central's
/// answer, and every way it can end gets a clear reply, never a stuck op.
@Suite(.serialized) struct LinkControlTests {
    static let a = ConnectionID(0x40)
    static let b = ConnectionID(0x41)
    static let centralA = TransportPeer(address: BluetoothAddress("11:22:33:44:55:66")!, addressType: .random, handle: 0x40)
    static let centralB = TransportPeer(address: BluetoothAddress("11:22:33:44:55:77")!, addressType: .random, handle: 0x41)
    static let lowLatency = ControlCommand.connectionParameters(central: "11:22:33:44:55:66", .preset(.lowLatency))

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let transport: FakeTransport
    let daemon: PeripheralDaemon

    init() throws {
        transport = FakeTransport(eventLoop: group.next())
        daemon = try PeripheralDaemon.serving(testConfigOn: transport)
        try daemon.start().wait()
    }

    /// `ControlOutcome` off the loop: a reply now, or the future of one.
    enum Answer: Sendable {
        case now(ControlReply)
        case later(EventLoopFuture<ControlReply>)
    }

    func execute(_ command: ControlCommand) throws -> Answer {
        try group.next().submit { () -> Answer in
            switch ControlDispatcher.execute(command, on: self.daemon) {
            case .now(let r): .now(r)
            case .later(let f): .later(f)
            }
        }.wait()
    }

    func later(_ command: ControlCommand) throws -> EventLoopFuture<ControlReply> {
        guard case .later(let f) = try execute(command) else { throw ControlError(.busy, "answered at once") }
        return f
    }

    func now(_ command: ControlCommand) throws -> ControlReply? {
        guard case .now(let r) = try execute(command) else { return nil }
        return r
    }

    @Test func theReplyWaitsForTheCentralsAnswer() throws {
        try transport.report(.connected(Self.a, Self.centralA))
        let reply = try later(Self.lowLatency)
        // 15 ms = 12 × 1.25 ms, 2 s = 200 × 10 ms.
        #expect(transport.linkRequests.map(\.1) == [.connectionParameters(LEConnectionParameters(intervalMin: 12, intervalMax: 12, latency: 0, supervisionTimeout: 200))])
        // One at a time per central.
        #expect(try now(.phy(central: "11:22:33:44:55:66", tx: .le2M, rx: .le2M, coding: .noPreference))
            == .failure(ControlError(.busy, "11:22:33:44:55:66 has a connection_parameters request waiting; send the next one after its reply")))
        try transport.report(.linkRequestFinished(Self.a, .connectionParameters, .accepted))
        #expect(try reply.wait() == .success)
        // Answered: the next one goes.
        let next = try later(.phy(central: "11:22:33:44:55:66", tx: .le2M, rx: .le1M, coding: .noPreference))
        try transport.report(.linkRequestFinished(Self.a, .phy, .refused("the PHY update failed: Unsupported Remote Feature (0x1A)")))
        #expect(try next.wait() == .failure(ControlError(.refused, "11:22:33:44:55:66: the PHY update failed: Unsupported Remote Feature (0x1A)")))
        try daemon.stop().wait()
    }

    @Test func aCentralThatLeavesWhileTheRequestWaitsGetsAnErrorReply() throws {
        try transport.report(.connected(Self.a, Self.centralA))
        let reply = try later(Self.lowLatency)
        try transport.report(.disconnected(Self.a, reason: .remoteUserTerminatedConnection))
        #expect(try reply.wait() == .failure(ControlError(.unknownCentral, "11:22:33:44:55:66 disconnected before answering")))
        // Nothing left waiting: a late answer changes nothing, and a new central can be asked.
        try transport.report(.linkRequestFinished(Self.a, .connectionParameters, .accepted))
        try transport.report(.connected(Self.a, Self.centralA))
        let again = try later(Self.lowLatency)
        try transport.report(.linkRequestFinished(Self.a, .connectionParameters, .accepted))
        #expect(try again.wait() == .success)
        try daemon.stop().wait()
    }

    @Test func everyConnectedCentralIsAskedAndEachAnswerIsInTheReply() throws {
        #expect(try now(.connectionParameters(central: nil, .preset(.balanced))) == .failure(ControlError(.unknownCentral, "no central is connected")))
        #expect(try now(Self.lowLatency) == .failure(ControlError(.unknownCentral, "no central 11:22:33:44:55:66 is connected")))
        try transport.report(.connected(Self.a, Self.centralA), .connected(Self.b, Self.centralB))
        let reply = try later(.connectionParameters(central: nil, .preset(.lowPower)))
        #expect(transport.linkRequests.map(\.0) == [Self.a, Self.b])
        try transport.report(.linkRequestFinished(Self.b, .connectionParameters, .refused("the central rejected the L2CAP Connection Parameter Update Request (result 1)")))
        try transport.report(.linkRequestFinished(Self.a, .connectionParameters, .accepted))
        #expect(try reply.wait() == .failure(ControlError(.refused, "11:22:33:44:55:77: the central rejected the L2CAP Connection Parameter Update Request (result 1)")))
        try daemon.stop().wait()
    }

    @Test func aTransportThatCannotRefusesAtOnceWithTheReason() throws {
        transport.refusesLinkRequests = true
        try transport.report(.connected(Self.a, Self.centralA))
        let reply = try later(Self.lowLatency)
        #expect(try reply.wait() == .failure(ControlError(.refused, "11:22:33:44:55:66: this transport cannot")))
        try daemon.stop().wait()
    }

    @Test func anAnswerOfAnotherKindAnswersNothing() throws {
        try transport.report(.connected(Self.a, Self.centralA))
        let reply = try later(Self.lowLatency)
        // A late PHY Update Complete of an older `phy` op: the connection_parameters op still waits.
        try transport.report(.linkRequestFinished(Self.a, .phy, .accepted))
        #expect(try now(.dataLength(central: "11:22:33:44:55:66", txOctets: 251))
            == .failure(ControlError(.busy, "11:22:33:44:55:66 has a connection_parameters request waiting; send the next one after its reply")))
        try transport.report(.linkRequestFinished(Self.a, .connectionParameters, .refused("no")))
        #expect(try reply.wait() == .failure(ControlError(.refused, "11:22:33:44:55:66: no")))
        try daemon.stop().wait()
    }

    @Test func aTimeoutRepliesAndTheStackForgetsTheRequest() throws {
        try group.next().submit { self.daemon.linkRequests.timeout = .milliseconds(10) }.wait()
        try transport.report(.connected(Self.a, Self.centralA))
        let reply = try later(.phy(central: "11:22:33:44:55:66", tx: .le2M, rx: .le2M, coding: .noPreference))
        #expect(try reply.wait() == .failure(ControlError(.timeout, "11:22:33:44:55:66: no answer within 0.01 s")))
        #expect(transport.cancelledLinkRequests.map(\.0) == [Self.a] && transport.cancelledLinkRequests.map(\.1) == [.phy])
        try daemon.stop().wait()
    }
}
