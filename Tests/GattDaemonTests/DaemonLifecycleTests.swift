import GattCore
import GattTransport
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GattDaemon

/// `PeripheralDaemon`'s lifecycle (`DaemonLifecycle`): which phase each start, failure,
/// retry, appearance of the adapter and stop leads to.
@Suite(.serialized) struct DaemonLifecycleTests {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let transport: FakeTransport
    let daemon: PeripheralDaemon

    init() throws {
        transport = FakeTransport(eventLoop: group.next())
        daemon = try PeripheralDaemon.serving(testConfigOn: transport)
    }

    func on<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T { try group.next().submit(body).wait() }

    /// The phase as a word (the enum carries promises and tasks, which do not compare).
    var phase: String {
        get throws {
            try on {
                switch self.daemon.lifecycle {
                case .created: "created"
                case .starting(let l): "starting \(Self.word(l))"
                case .serving(let l): "serving \(Self.word(l))"
                case .stopping: "stopping"
                case .stopped: "stopped"
                }
            }
        }
    }

    static func word(_ l: TransportLink) -> String {
        switch l {
        case .opening: "opening"
        case .open: "open"
        case .retrying: "retrying"
        case .awaitingController: "awaiting"
        }
    }

    @Test func aStartThatOpensServesAndAStopStops() throws {
        #expect(try phase == "created")
        try daemon.start().wait()
        #expect(try phase == "serving open")
        try daemon.stop().wait()
        #expect(try phase == "stopped")
        #expect(transport.closed)
    }

    /// A failed first open is a retry with backoff after READY=1, and the backoff is not
    /// reset by the start completing (the next failure is logged as a repeat, not a first).
    @Test func aFailedFirstOpenServesWhileRetrying() throws {
        transport.openResults = [TransportOpenFailure("cannot open", retry: .withBackoff)]
        try daemon.start().wait()
        #expect(try phase == "serving retrying")
        #expect(try on { self.daemon.backoff.failures } == 1)
        try daemon.stop().wait()
        #expect(try phase == "stopped")
    }

    /// An adapter that is down: the daemon waits for it, and opens when the transport says
    /// it came back (not before, and not after a stop).
    @Test func aMissingAdapterIsAwaitedAndOpenedWhenItAppears() throws {
        transport.openResults = [TransportOpenFailure("hci0 is down", retry: .whenAvailable), nil]
        try daemon.start().wait()
        #expect(try phase == "serving awaiting")
        #expect(transport.opens == 1)
        try on { self.transport.onAvailable?() }
        #expect(transport.opens == 2)
        #expect(try phase == "serving open")
        #expect(try on { self.daemon.backoff.failures } == 0)
    }

    @Test func nothingOpensAfterAStop() throws {
        transport.openResults = [TransportOpenFailure("hci0 is down", retry: .whenAvailable), nil]
        try daemon.start().wait()
        try daemon.stop().wait()
        try on { self.transport.onAvailable?() }
        #expect(transport.opens == 1)
        #expect(try phase == "stopped")
    }

    /// A controller lost while serving is reopened after the backoff delay; a second
    /// `stop()` returns the first one's future.
    @Test func aLostControllerIsRetried() throws {
        try daemon.start().wait()
        try transport.report(.lost(reason: "reset"))
        #expect(try phase == "serving retrying")
        let first = daemon.stop()
        let second = daemon.stop()
        try first.wait()
        try second.wait()
        #expect(try phase == "stopped")
    }

    /// A second `start()` does not open the transport again.
    @Test func aSecondStartIsANoOp() throws {
        try daemon.start().wait()
        try daemon.start().wait()
        #expect(transport.opens == 1)
    }
}
