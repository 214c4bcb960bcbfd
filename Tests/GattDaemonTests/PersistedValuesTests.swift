import GattCore
import Logging
import NIOCore
import NIOPosix
import Synchronization
import SystemPackage
import Testing

@testable import GattDaemon

/// Group commit and failure reporting of `PersistedValues` over a fake directory.
@Suite struct PersistedValuesTests {
    final class Fixture: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let dir = FakeStateDirectory()
        final class Lines: Sendable { let list = Mutex<[String]>([]) }
        let lines = Lines()
        let values: PersistedValues
        var loop: any EventLoop { group.next() }

        init() {
            var handler = JournalLogHandler(label: "test", format: .journal) { [lines] line in lines.list.withLock { $0.append(line) } }
            handler.logLevel = .info
            values = PersistedValues(store: PersistentStore(directory: dir), logger: Logger(label: "test", factory: { _ in handler }))
        }

        func commit(_ key: String, _ value: [UInt8]) throws -> EventLoopFuture<Void> {
            try loop.submit { self.values.commit([(key, value)], on: self.loop).map { _ in } }.wait()
        }

        func shutdown() { try? group.syncShutdownGracefully() }
    }

    @Test func writesArrivingDuringAFlushShareTheNextOne() throws {
        let f = Fixture()
        defer { f.shutdown() }
        f.dir.state.withLock { $0.blockWrites = true }
        let order = Mutex<[Int]>([])
        var futures = [try f.commit("a", [1])]
        while f.dir.state.withLock({ $0.blocked }) == 0 { usleepMilliseconds(1) }
        futures += [try f.commit("a", [2]), try f.commit("b", [3]), try f.commit("a", [4])]
        for (i, fut) in futures.enumerated() { fut.whenSuccess { order.withLock { $0.append(i) } } }
        #expect(f.dir.state.withLock { $0.writes } == 0)
        f.dir.state.withLock { $0.blockWrites = false }
        for fut in futures { try fut.wait() }
        #expect(order.withLock { $0 } == [0, 1, 2, 3])
        #expect(f.dir.state.withLock { $0.writes } == 2)
        #expect(PersistentStore(directory: f.dir).load().values == ["a": [4], "b": [3]])
        #expect(try f.loop.submit { f.values.values } .wait() == ["a": [4], "b": [3]])
    }

    @Test func failuresFailTheirBatchAreLoggedOncePerConditionAndRecover() throws {
        let f = Fixture()
        defer { f.shutdown() }
        try f.commit("a", [1]).wait()
        f.dir.setFailing(.noSpace)
        for n in 2...4 {
            #expect(throws: PersistentStore.Error.self) { try f.commit("a", [UInt8(n)]).wait() }
        }
        f.dir.setFailing(.readOnlyFileSystem)
        #expect(throws: PersistentStore.Error.self) { try f.commit("a", [5]).wait() }
        #expect(throws: PersistentStore.Error.self) { try f.commit("a", [6]).wait() }
        #expect(try f.loop.submit { f.values.values }.wait() == ["a": [1]])
        f.dir.setFailing(nil)
        #expect(PersistentStore(directory: f.dir).load().values == ["a": [1]])
        try f.commit("a", [7]).wait()
        #expect(PersistentStore(directory: f.dir).load().values == ["a": [7]])
        #expect(f.lines.list.withLock { $0 } == [
            "<3>cannot save persisted values: cannot write /fake/values.log: No space left on device; writes of persisted values are answered with an error until saving works again\n",
            "<3>cannot save persisted values: cannot write /fake/values.json.tmp: Read-only file system; writes of persisted values are answered with an error until saving works again\n",
            "<5>persisted values are saved again in /fake (after: Read-only file system)\n",
        ])
    }

    @Test func bestEffortRecordsSkipTheLatestValueAndFlushCompacts() throws {
        let f = Fixture()
        defer { f.shutdown() }
        let db = GATTDatabase(deviceName: "x", services: [
            ServiceDefinition(id: "s", uuid: 0xAAA0, characteristics: [
                CharacteristicDefinition(id: "p", uuid: 0xAAA1, properties: [.read, .writeWithoutResponse], value: [0], maxLength: 4, valueSource: .persisted),
                CharacteristicDefinition(id: "q", uuid: 0xAAA2, properties: [.read, .writeWithoutResponse], value: [0], maxLength: 4),
            ])
        ])
        try f.loop.submit {
            f.values.record(db, characteristic: CharacteristicIndex(6), value: [9], on: f.loop)
            f.values.record(db, characteristic: CharacteristicIndex(6), value: [9], on: f.loop)
            f.values.record(db, characteristic: CharacteristicIndex(7), value: [1], on: f.loop)
        }.wait()
        try f.loop.submit { f.values.flush() }.wait()
        #expect(f.dir.state.withLock { $0.writes } == 1)
        #expect(f.dir.files["values.log"] == [])
        #expect(PersistentStore(directory: f.dir).load().values == ["p": [9]])
    }
}
