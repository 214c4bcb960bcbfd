import GattCore
import Testing

@testable import GattProfiles

/// The console's rules apart from the I/O: the outflow (chunks of ATT_MTU - 3, one in
/// flight, nothing lost when a notification reaches nobody, the program not read past the
/// high-water mark) and who gets a session.
@Suite struct ConsoleRulesTests {
    @Test func chunksOfATTMTUMinusThreeOneInFlight() {
        var o = ConsoleOutflow(mtu: 23)
        o.printed(Array(0..<45))
        #expect(o.next() == Array(0..<20))
        #expect(o.next() == nil)  // the first is in flight
        o.completed(delivered: true)
        o.mtuChanged(30)
        #expect(o.next() == Array(20..<45))
        o.completed(delivered: true)
        #expect(o.isDrained && o.next() == nil)
    }

    @Test func theLargestChunkIsAValuesLimit() {
        #expect(ConsoleOutflow.chunkSize(mtu: 517) == 512)
        #expect(ConsoleOutflow.chunkSize(mtu: 23) == 20)
        #expect(ConsoleOutflow.chunkSize(mtu: 2) == 1)
    }

    @Test func aNotificationThatReachedNobodyIsSentFirstOnceSubscribedAgain() {
        var o = ConsoleOutflow(mtu: 23)
        o.printed(Array("abc".utf8))
        #expect(o.next() == Array("abc".utf8))
        o.printed(Array("def".utf8))
        o.completed(delivered: false)  // the central turned TX off meanwhile
        #expect(o.next() == nil)
        o.subscriptionChanged(true)
        #expect(o.next() == Array("abcdef".utf8))
    }

    @Test func theProgramIsNotReadPastTheHighWaterMark() {
        var o = ConsoleOutflow(mtu: 23, highWater: 100)
        o.printed([UInt8](repeating: 1, count: 99))
        #expect(o.readsProgram)
        o.printed([1])
        #expect(!o.readsProgram)
        _ = o.next()
        o.completed(delivered: true)
        #expect(o.readsProgram)
    }

    @Test func admission() {
        typealias A = ConsoleAdmission
        #expect(A.refusal(security: .authenticated, link: .high, bonded: true, sessions: 0, maxSessions: 1) == nil)
        #expect(A.refusal(security: .authenticated, link: .medium, bonded: true, sessions: 0, maxSessions: 1)?.hasPrefix("the link is not authenticated") == true)
        #expect(A.refusal(security: .authenticated, link: .high, bonded: false, sessions: 0, maxSessions: 1)?.hasPrefix("the central is not bonded") == true)
        #expect(A.refusal(security: .encrypted, link: .low, bonded: false, sessions: 0, maxSessions: 1)?.hasPrefix("the link is not encrypted") == true)
        #expect(A.refusal(security: .encrypted, link: .medium, bonded: false, sessions: 0, maxSessions: 1) == nil)
        #expect(A.refusal(security: .none, link: .low, bonded: false, sessions: 1, maxSessions: 1) == "1 sessions are running (max_sessions)")
    }

    @Test func batteryReadingNotifiesChangesAndLogsAFailureOnce() {
        var r = BatteryReading()
        #expect(r.update("57\n") == .changed(57))
        #expect(r.update("57") == .none)
        #expect(r.update("garbage") == .unreadable(first: true))
        #expect(r.update(nil) == .unreadable(first: false))
        #expect(r.update("140") == .changed(100))
        #expect(r.update("-1") == .unreadable(first: true))
    }
}
