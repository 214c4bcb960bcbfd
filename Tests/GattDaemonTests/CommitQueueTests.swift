import Testing

@testable import GattDaemon

/// The order of persisted writes: one value per key per commit, the newest; durable values
/// only move forward; tickets complete with the commit that covers them.
@Suite struct CommitQueueTests {
    @Test func aBatchHoldsTheNewestValueOfEachKey() {
        var q = CommitQueue(durable: ["a": [0]])
        q.submit([("a", [1]), ("b", [7])], ticket: 1)
        q.submit([("a", [2])], ticket: 2)
        #expect(q.latest("a") == [2])
        let batch = q.startCommit()
        #expect(batch == ["a": [2], "b": [7]])
        let second = q.startCommit()
        #expect(second == nil, "one commit at a time")
        let done = q.finish(durable: true)
        #expect(done == [.init(ticket: 1, overtaken: [:]), .init(ticket: 2, overtaken: [:])])
        #expect(q.durable["a"]?.value == [2])
        #expect(!q.isBusy)
    }

    @Test func writesSubmittedDuringACommitWaitForTheNextAndTheDurableValueOnlyMovesForward() {
        var q = CommitQueue(durable: [:])
        q.submit([("a", [1])], ticket: 1)
        let first = q.startCommit()
        #expect(first == ["a": [1]])
        for n in 2...16 { q.submit([("a", [UInt8(n)])], ticket: n) }
        let done = q.finish(durable: true)
        #expect(done.map(\.ticket) == [1])
        // Putting [1] in place is no new write; the next commit holds only the newest value.
        #expect(q.latest("a") == [16])
        let next = q.startCommit()
        #expect(next == ["a": [16]])
        let rest = q.finish(durable: true)
        #expect(rest.map(\.ticket) == Array(2...16))
        #expect(q.durable["a"]?.value == [16])
    }

    @Test func aShutdownCommitAheadOfTheOneInFlightIsNotUndone() {
        var q = CommitQueue(durable: [:])
        q.submit([("a", [1])], ticket: 1)
        _ = q.startCommit()
        q.submit([("a", [2])], ticket: 2)
        let waiting = q.takeWaiting()
        let shutdown = q.finish(waiting, durable: true)
        #expect(shutdown.map(\.ticket) == [2])
        let inFlight = q.finish(durable: true)
        #expect(inFlight.map(\.ticket) == [1])
        #expect(q.durable["a"]?.value == [2], "the older batch, finished later, does not go back")
    }

    @Test func aWriteCommandAfterAWaitingWriteOvertakesIt() {
        var q = CommitQueue(durable: [:])
        q.submit([("a", [1]), ("b", [1])], ticket: 1)
        let recorded = q.record("a", [9])
        let again = q.record("a", [9])
        #expect(recorded)
        #expect(!again, "already the newest value")
        let batch = q.startCommit()
        #expect(batch == ["a": [9], "b": [1]])
        let done = q.finish(durable: true)
        #expect(done == [.init(ticket: 1, overtaken: ["a": [9]])])
        q.submit([("a", [3])], ticket: 2)
        _ = q.startCommit()
        let later = q.finish(durable: true)
        #expect(later == [.init(ticket: 2, overtaken: [:])], "submitted after the Write Command: newer")
    }

    @Test func aFailedCommitFailsItsTicketsAndKeepsTheDurableValues() {
        var q = CommitQueue(durable: ["a": [5]])
        q.submit([("a", [6])], ticket: 1)
        _ = q.startCommit()
        let failed = q.finish(durable: false)
        #expect(failed.map(\.ticket) == [1])
        #expect(q.durable["a"]?.value == [5])
        #expect(q.latest("a") == [5])
    }
}
