@testable import GattCore
@testable import GattHost
import GattTestFixtures

extension ACLScheduler {
    /// Violations of the flow-control invariants (empty when they hold): credits plus the
    /// packets in flight never exceed the controller's buffers, and nothing is negative.
    var invariantViolations: [String] {
        var v: [String] = []
        let inFlight = links.reduce(0) { $0 + $1.inFlight }
        if credits < 0 { v.append("negative credits \(credits)") }
        if credits + inFlight > totalBuffers { v.append("credits \(credits) + in flight \(inFlight) > buffers \(totalBuffers)") }
        for l in links where l.inFlight < 0 { v.append("handle \(l.handle): negative in-flight count") }
        if Set(links.map(\.handle)).count != links.count || (!links.isEmpty && !links.indices.contains(cursor)) {
            v.append("round-robin list out of step with the links")
        }
        return v
    }
}

extension Host {
    /// Violations of the ACL flow-control invariants (empty when they hold).
    var aclInvariantViolations: [String] { acl.invariantViolations }
}
