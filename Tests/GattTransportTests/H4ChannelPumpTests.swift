import GattCore
import GattHost
import NIOCore
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import GattTransport

/// The H4 transport's credit-based channel pump over a real socket pair: SDUs both ways,
/// backpressure both ways, close ↔ disconnect (docs: the app L2CAP channel design).
@Suite("H4 channel pump")
struct H4ChannelPumpTests {
    enum Call: Equatable, Sendable {
        case send([UInt8])
        case consumed
        case close
        case warning(String)
        case readyWhenSent
    }

    static let id = CreditBasedChannelID(connection: ConnectionID(0x40), cid: 0x40)

    final class Counter: Sendable {
        private let mutex = Mutex(0)
        func add() { mutex.withLock { $0 += 1 } }
        var value: Int { mutex.withLock { $0 } }
    }

    /// A pump on its own event loop, and the host calls it makes, in order.
    final class Rig: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var loop: any EventLoop { group.next() }
        let calls: AsyncStream<Call>
        private let continuation: AsyncStream<Call>.Continuation
        var iterator: AsyncStream<Call>.Iterator
        var pump: H4ChannelPump!
        let consumedCount = Counter()

        init() {
            (calls, continuation) = AsyncStream.makeStream()
            iterator = calls.makeAsyncIterator()
            let c = continuation
            let count = consumedCount
            pump = H4ChannelPump(
                eventLoop: group.next(),
                calls: H4ChannelPump.HostCalls(
                    send: { _, sdu in c.yield(.send(sdu)) }, consumed: { _ in
                        count.add()
                        c.yield(.consumed)
                    }, close: { _ in c.yield(.close) },
                    warning: { c.yield(.warning($0)) }, readyWhenSent: { _ in c.yield(.readyWhenSent) }))
        }

        func on(_ event: CreditBasedChannelEvent) async throws -> L2CAPChannelOpened? {
            try await loop.submit { self.pump.handle(event) }.get()
        }

        /// Opens the channel (MTU 100 each way) and returns the program's end.
        func open(peerMTU: Int = 100) async throws -> Int32 {
            let opened = try await on(.opened(H4ChannelPumpTests.id, server: "s", psm: 0x80, peerMTU: peerMTU, mtu: 100))
            let ticket = try #require(opened?.ticket)
            #expect(opened == L2CAPChannelOpened(server: "s", psm: 0x80, peerMTU: peerMTU, mtu: 100, ticket: ticket))
            let socket = try #require(try await loop.submit { self.pump.take(ticket) }.get())
            #expect(try await loop.submit { self.pump.take(ticket) }.get() == nil, "taken once")
            return socket
        }

        func next() async -> Call? { await iterator.next() }

        func shutdown() async throws {
            try await loop.submit { self.pump.shutdown() }.get()
            try await group.shutdownGracefully()
        }
    }

    /// One message from the program's end, waiting for it (poll, not a sleep); nil at EOF.
    static func read(_ fd: Int32) -> [UInt8]? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&p, 1, -1)
        var buffer = [UInt8](repeating: 0, count: 70_000)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? Array(buffer[..<n]) : nil
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool { send(fd, bytes, bytes.count, Int32(MSG_DONTWAIT)) == bytes.count }

    @Test func sdusFromTheCentralGiveCreditsBackOnlyOnceWritten() async throws {
        let rig = Rig()
        let program = try await rig.open()
        defer { close(program) }
        // The program does not read: the pair fills, the rest wait, and their credits do not come back.
        let sent = 50
        for k in 0..<sent { _ = try await rig.on(.received(Self.id, [UInt8](repeating: UInt8(k), count: 100))) }
        var consumed = 0
        let written = rig.consumedCount.value  // every write so far happened inside `on`
        #expect(written > 0 && written < sent, "\(written) of \(sent) written")
        // Now the program reads them all, in order; room frees up and the credits follow.
        for k in 0..<sent {
            #expect(Self.read(program) == [UInt8](repeating: UInt8(k), count: 100))
        }
        while consumed < sent, let call = await rig.next() {
            #expect(call == .consumed)
            consumed += 1
        }
        #expect(consumed == sent)
        try await rig.shutdown()
    }

    /// "Send the file, then disconnect": SDUs still waiting for room in the pair when the
    /// channel closes reach the program, in order, before EOF.
    @Test func sdusWaitingForTheProgramSurviveTheChannelClosing() async throws {
        let rig = Rig()
        let program = try await rig.open()
        defer { close(program) }
        let sent = 50
        for k in 0..<sent { _ = try await rig.on(.received(Self.id, [UInt8](repeating: UInt8(k), count: 100))) }
        #expect(rig.consumedCount.value < sent, "some wait for room")
        _ = try await rig.on(.closed(Self.id, reason: "the central disconnected the channel"))
        for k in 0..<sent {
            #expect(Self.read(program) == [UInt8](repeating: UInt8(k), count: 100))
        }
        #expect(Self.read(program) == nil, "then EOF")
        try await rig.shutdown()
    }

    @Test func theProgramIsReadOnlyWhenInvited() async throws {
        let rig = Rig()
        let program = try await rig.open()
        defer { close(program) }
        // Not invited yet: the program's writes fill the pair and then fail with EAGAIN.
        var written = 0
        while Self.write(program, [UInt8(written), 1, 2]) { written += 1 }
        #expect(errno == EAGAIN)
        #expect(written > 0)
        // Each invitation takes exactly one SDU, in order.
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .send([0, 1, 2]))
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .send([1, 1, 2]))
        try await rig.shutdown()
    }

    @Test func oversizedAndEmptyMessages() async throws {
        let rig = Rig()
        let program = try await rig.open(peerMTU: 10)
        defer { close(program) }
        #expect(Self.write(program, [UInt8](repeating: 9, count: 11)))
        #expect(Self.write(program, []))
        #expect(Self.write(program, [7]))
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .warning("connection 64 CID 0x0040: the program wrote 11 bytes, more than the central's MTU 10; dropped"))
        #expect(await rig.next() == .send([]))
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .send([7]))
        try await rig.shutdown()
    }

    @Test(.timeLimit(.minutes(1))) func theProgramClosingDisconnectsTheChannel() async throws {
        let rig = Rig()
        let program = try await rig.open()
        #expect(Self.write(program, [1]))
        #expect(Self.write(program, []))
        #expect(Self.write(program, [2]))
        close(program)
        // What it wrote before closing still goes (an empty SDU too), then the close.
        #expect(await rig.next() == .readyWhenSent)
        for sdu: [UInt8] in [[1], [], [2]] {
            _ = try await rig.on(.ready(Self.id))
            #expect(await rig.next() == .send(sdu))
        }
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .close)
        try await rig.shutdown()
    }

    /// The central gives no credits (no `.ready`): the program is not read, but its leaving,
    /// with nothing left to send, still ends the channel.
    @Test(.timeLimit(.minutes(1))) func theProgramLeavingWhileNotReadDisconnectsTheChannel() async throws {
        let rig = Rig()
        let program = try await rig.open()
        close(program)
        #expect(await rig.next() == .close)
        try await rig.shutdown()
    }

    /// The program's last SDU is on its way (it may take the central's last credit: no
    /// `.ready` would follow) when it leaves: the pump asks for `.ready` once that SDU has
    /// left, credits or not, and then finds the end.
    @Test(.timeLimit(.minutes(1))) func theProgramLeavingWhileItsLastSDUIsOnItsWayEndsTheChannelOnceItLeft() async throws {
        let rig = Rig()
        let program = try await rig.open()
        #expect(Self.write(program, [1]))
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .send([1]))
        close(program)
        #expect(await rig.next() == .readyWhenSent)
        _ = try await rig.on(.ready(Self.id))  // the SDU left
        #expect(await rig.next() == .close)
        try await rig.shutdown()
    }

    /// The program writes SDUs and leaves before any is read (no credits yet): each goes as
    /// `.ready` comes, which the pump asked to come once the previous SDU left, credits or not.
    @Test(.timeLimit(.minutes(1))) func theProgramLeavingWithSDUsUnreadEndsTheChannelAfterTheLast() async throws {
        let rig = Rig()
        let program = try await rig.open()
        #expect(Self.write(program, [1]))
        #expect(Self.write(program, [2]))
        close(program)
        #expect(await rig.next() == .readyWhenSent)
        for sdu: [UInt8] in [[1], [2]] {
            _ = try await rig.on(.ready(Self.id))
            #expect(await rig.next() == .send(sdu))
        }
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .close)
        try await rig.shutdown()
    }

    /// shutdown(SHUT_WR) is the program's end of data too: the channel disconnects, and no
    /// empty SDUs follow (a half-closed AF_UNIX socket reads 0 with POLLRDHUP, no POLLHUP).
    @Test func theProgramShuttingDownItsSendingSideDisconnectsTheChannel() async throws {
        let rig = Rig()
        let program = try await rig.open()
        defer { close(program) }
        #expect(Self.write(program, [1]))
        #expect(shutdown(program, Int32(SHUT_WR)) == 0)
        #expect(await rig.next() == .readyWhenSent)
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .send([1]))
        _ = try await rig.on(.ready(Self.id))
        #expect(await rig.next() == .close)
        try await rig.shutdown()
    }

    @Test func theChannelClosingGivesTheProgramEOFAfterItsSDUs() async throws {
        let rig = Rig()
        let program = try await rig.open()
        defer { close(program) }
        _ = try await rig.on(.received(Self.id, [1, 2, 3]))
        #expect(await rig.next() == .consumed)
        _ = try await rig.on(.closed(Self.id, reason: "the link dropped"))
        #expect(Self.read(program) == [1, 2, 3])
        #expect(Self.read(program) == nil)
        try await rig.shutdown()
    }
}
