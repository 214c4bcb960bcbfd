import Testing

@testable import GattTransport

/// The kernel transport's adapter lifecycle without an adapter: what `open` does in each
/// state, what losing the adapter drops, when the daemon hears it is back, and which
/// completions still count (the sockets themselves run in scripts/kernel-vm-test).
@Suite("Kernel adapter lifecycle")
struct KernelAdapterLifecycleTests {
    /// A lifecycle opened to ready, with its session.
    static func ready() -> (KernelAdapterLifecycle, Int) {
        var l = KernelAdapterLifecycle()
        guard case .start(let s) = l.open() else { preconditionFailure("idle opens") }
        let r1 = l.opened(session: s)
        #expect(r1)
        return (l, s)
    }

    /// Down and up while a bring-up runs: that bring-up's session is stale, and the open that
    /// reports it must not wait for an adapter that is back already.
    @Test func anAdapterThatWentAndCameBackDuringAnOpenIsOpenedAgain() {
        var l = KernelAdapterLifecycle()
        guard case .start(let s) = l.open() else { preconditionFailure("idle opens") }
        let loss = l.lost()
        #expect(loss == .opening)
        #expect(l.waitsForAdapter)
        let back = l.appeared()
        #expect(back)
        #expect(!l.waitsForAdapter)
        let stale = l.opened(session: s)
        #expect(!stale)
        let again = l.open()
        #expect(again == .start(session: s + 1))
    }

    @Test func openFromIdleStartsASessionAndReachesReady() {
        var l = KernelAdapterLifecycle()
        #expect(l.state == .idle)
        let decision = l.open()
        guard case .start(let s) = decision else {
            Issue.record("idle: \(decision)")
            return
        }
        #expect(l.state == .opening(session: s))
        #expect(l.isCurrent(s))
        #expect(!l.isReady)
        // A second open while opening does nothing (no second bring-up).
        let r2 = l.open()
        #expect(r2 == .nothing)
        let r3 = l.opened(session: s)
        #expect(r3)
        #expect(l.state == .ready(session: s))
        #expect(l.isReady(in: s))
        let r4 = l.open()
        #expect(r4 == .nothing)
    }

    /// A failed bring-up leaves the adapter to be tried again by the next open, in a new session.
    @Test func failedOpenIsTriedAgainInANewSession() {
        var l = KernelAdapterLifecycle()
        guard case .start(let first) = l.open() else { preconditionFailure() }
        l.openFailed(session: first)
        #expect(l.state == .idle)
        guard case .start(let second) = l.open() else {
            Issue.record("idle after a failure: \(l.state)")
            return
        }
        #expect(second != first)
        #expect(!l.isCurrent(first))
    }

    /// Powered off (or removed) while open: the centrals are dropped, open waits, and work of
    /// the old session no longer counts.
    @Test func adapterLostWhileReadyWaitsForIt() {
        var (l, s) = Self.ready()
        let r5 = l.lost()
        #expect(r5 == .ready)
        #expect(l.state == .away)
        #expect(!l.isReady)
        #expect(!l.isCurrent(s))
        let r6 = l.open()
        #expect(r6 == .away)
        // Gone again (removed after down): nothing more to drop.
        let r7 = l.lost()
        #expect(r7 == .nothing)
    }

    /// Powered on (or added) again: the daemon is told once and the next open starts a new
    /// session; an operation of the old session completing now is dropped.
    @Test func adapterBackOpensInANewSession() {
        var (l, old) = Self.ready()
        _ = l.lost()
        let r8 = l.appeared()
        #expect(r8)
        #expect(l.state == .idle)
        guard case .start(let s) = l.open() else {
            Issue.record("back: \(l.state)")
            return
        }
        #expect(s != old)
        let r9 = l.opened(session: s)
        #expect(r9)
        #expect(!l.isCurrent(old))
        #expect(!l.isReady(in: old))
        #expect(l.isReady(in: s))
        // Up while ready (the monitor's duplicate): nothing to tell.
        let r10 = l.appeared()
        #expect(!r10)
        #expect(l.state == .ready(session: s))
    }

    /// The adapter goes while it is being brought up: the bring-up's result is refused (its
    /// controller closed), and its failure does not make the adapter idle.
    @Test func adapterLostWhileOpeningRefusesTheBringUp() {
        var l = KernelAdapterLifecycle()
        guard case .start(let s) = l.open() else { preconditionFailure() }
        let r11 = l.lost()
        #expect(r11 == .opening)
        let r12 = l.opened(session: s)
        #expect(!r12)
        l.openFailed(session: s)
        #expect(l.state == .away)
    }

    /// Gone and back while a bring-up was running: the old bring-up cannot make the new one ready.
    @Test func staleBringUpDoesNotCompleteANewOne() {
        var l = KernelAdapterLifecycle()
        guard case .start(let old) = l.open() else { preconditionFailure() }
        _ = l.lost()
        _ = l.appeared()
        guard case .start(let s) = l.open() else { preconditionFailure() }
        let r13 = l.opened(session: old)
        #expect(!r13)
        l.openFailed(session: old)
        #expect(l.state == .opening(session: s))
    }

    /// Closed while opening: the bring-up is refused, and nothing reopens it.
    @Test func closeWhileOpening() {
        var l = KernelAdapterLifecycle()
        guard case .start(let s) = l.open() else { preconditionFailure() }
        let r14 = l.close()
        #expect(!r14)
        let r15 = l.opened(session: s)
        #expect(!r15)
        #expect(l.state == .closed)
        let r16 = l.open()
        #expect(r16 == .nothing)
        let r17 = l.lost()
        #expect(r17 == nil)
        let r18 = l.appeared()
        #expect(!r18)
        #expect(l.state == .closed)
    }

    /// Closed while ready: the caller takes its advertising instances off the air; the session ends.
    @Test func closeWhileReadySaysItWasReady() {
        var (l, s) = Self.ready()
        let r19 = l.close()
        #expect(r19)
        #expect(!l.isCurrent(s))
        #expect(l.isClosed)
    }

    /// Registered while idle (never opened, or the last open failed): the daemon may try now.
    @Test func appearedWhileIdleTellsTheDaemon() {
        var l = KernelAdapterLifecycle()
        let r20 = l.appeared()
        #expect(r20)
        #expect(l.state == .idle)
        let r21 = l.lost()
        #expect(r21 == .nothing)
        #expect(l.state == .away)
    }
}
