/// What a client that cached a service needs to know about it: its handle range and a
/// digest of what the Database Hash covers in it (Core Spec Vol 3 Part G §7.3).
public struct ServiceFingerprint: Equatable, Hashable, Sendable {
    public var start: UInt16
    public var end: UInt16
    /// AES-CMAC over the service's hashed attributes, as for the Database Hash.
    public var digest: [UInt8]
    public init(start: UInt16, end: UInt16, digest: [UInt8]) {
        self.start = start
        self.end = end
        self.digest = digest
    }
}

extension GATTDatabase {
    /// One fingerprint per service, in handle order.
    public var serviceFingerprints: [ServiceFingerprint] {
        services.map { s in
            let lo = firstIndex(atOrAfter: Int(s.handle.rawValue)), hi = firstIndex(atOrAfter: Int(s.endHandle.rawValue) + 1)
            return ServiceFingerprint(start: s.handle.rawValue, end: s.endHandle.rawValue, digest: Self.computeHash(Array(attributes[lo..<hi])))
        }
    }

    /// The handle range a Service Changed must cover (§7.1) for a client that cached `old`
    /// to learn `new`: from the first to the last handle of every service that is not in
    /// both, unchanged at the same handles; nil when none changed.
    public static func changedRange(from old: [ServiceFingerprint], to new: [ServiceFingerprint]) -> HandleRange? {
        let before = Set(old), after = Set(new)
        let changed = old.filter { !after.contains($0) } + new.filter { !before.contains($0) }
        guard let start = changed.map(\.start).min(), let end = changed.map(\.end).max() else { return nil }
        return HandleRange(start: start, end: end)
    }
}
