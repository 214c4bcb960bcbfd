import GattCore
import Testing

@testable import GattTransport

/// `KernelAdvertising`, the kernel transport's advertising rules without I/O: instance numbers,
/// refusals against the kernel's limits, Busy answers tried again, and what stops with gattd.
@Suite struct KernelAdvertisingRulesTests {
    static let payloads = KernelAdvertisingTests.payloads
    static func set(_ id: String) -> AdvertisingSet {
        AdvertisingSet(id: id, path: id == AdvertisingSet.primaryID ? AdvertisingSet.primaryPath : "advertising_sets[\(id)]", payloads: payloads)
    }
    static let support = KernelAdvertisingSupport(
        commands: [], features: KernelManagement.AdvertisingFeatures(
            supportedFlags: [.connectable], maximumAdvertisingDataLength: 31, maximumScanResponseLength: 31, maximumInstances: 2, instances: []))

    static func instances(_ ops: [(set: String, KernelAdvertisingDriver.Operation)]) -> [String: UInt8] {
        Dictionary(uniqueKeysWithValues: ops.compactMap { id, op in
            switch op {
            case .add(let i, _), .replace(let i, _): (id, i.instance)
            case .remove: nil
            }
        })
    }

    @Test func instanceNumbersStayWithTheirSetsAcrossAdapterSessions() {
        var a = KernelAdvertising()
        a.opened(support: Self.support)
        let first = a.setDesired([Self.set("primary"), Self.set("b"), Self.set("a")], limits: nil)
        #expect(first.refused.isEmpty)
        // The primary's is 1; the others the next free one, in the order they first came.
        #expect(Self.instances(first.operations) == ["primary": 1, "b": 2, "a": 3])
        a.lost()
        a.opened(support: Self.support)
        let again = a.setDesired([Self.set("a"), Self.set("primary")], limits: nil)
        #expect(Self.instances(again.operations) == ["primary": 1, "a": 3])
    }

    @Test func aSetBeyondTheKernelsInstancesIsRefusedNamingItsPath() {
        var a = KernelAdvertising()
        a.opened(support: Self.support)
        let limits = Self.support.limits(extendedController: false)
        let (refused, operations) = a.setDesired([Self.set("primary"), Self.set("b"), Self.set("c")], limits: limits)
        #expect(operations.map(\.set) == ["b", "primary"])
        guard case .advertisingRefused(false, let reason, "c")? = refused.first, refused.count == 1 else {
            Issue.record("expected c refused, got \(refused)")
            return
        }
        #expect(reason.contains("advertising_sets[c]"))
    }

    @Test func busyIsTriedAgainWithGrowingDelaysThenCountsAsTheKernelsAnswer() throws {
        var a = KernelAdvertising()
        a.opened(support: Self.support)
        let (_, operations) = a.setDesired([Self.set("primary")], limits: nil)
        let op = try #require(operations.first?.1)
        let busy = KernelAdvertisingDriver.Outcome.failed(status: KernelManagement.Status.busy, reason: "busy")
        var delays: [Duration] = []
        for _ in 0..<KernelAdvertising.busyRetryLimit {
            let result = a.finished("primary", op, busy, connected: false)
            let (events, next) = try #require(result)
            #expect(events.isEmpty)
            guard case .retry(op, let delay)? = next else {
                Issue.record("expected the same operation again, got \(String(describing: next))")
                return
            }
            delays.append(delay)
        }
        #expect(delays == [100, 200, 400, 800, 1600, 1600, 1600, 1600].map { Duration.milliseconds($0) })
        // The next Busy is the kernel's answer: the driver decides (a refusal, no retry).
        let result = a.finished("primary", op, busy, connected: false)
        let (events, next) = try #require(result)
        #expect(next == nil)
        #expect(events.contains { if case .advertisingRefused(_, _, "primary") = $0 { true } else { false } })
    }

    @Test func anOperationForASetWithoutADriverAnswersNothingAndOwnInstancesAreTheOnesOn() {
        var a = KernelAdvertising()
        a.opened(support: Self.support)
        let (_, operations) = a.setDesired([Self.set("primary"), Self.set("b")], limits: nil)
        #expect(a.ownInstances == [1, 2])  // being added: removed at stop whatever the answer
        for (id, op) in operations { _ = a.finished(id, op, .done, connected: false) }
        #expect(a.ownInstances == [1, 2])
        a.lost()
        #expect(a.ownInstances.isEmpty)
        let late = a.finished("b", operations[0].1, .done, connected: false)
        #expect(late == nil)
    }
}
