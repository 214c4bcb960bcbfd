/// Where runtime services go (handles never move, Vol 3 Part G §2.5.2: a client caches them):
/// configured services at their config positions, services added at runtime after the last
/// handle in use, a removed service leaving a gap. Gaps are not reused while gattd runs, so
/// no cached handle (a bonded central's or a connected one's) ever means something else.
public struct ServiceLayout: Sendable, Equatable {
    public var services: [ServiceDefinition]
    /// The first handle of each service (nil: right after the previous one).
    public var placements: [UInt16?]
    /// Whether each service came from the config (false: added at runtime).
    public var fromConfig: [Bool]

    public init(config services: [ServiceDefinition]) {
        self.services = services
        self.placements = Array(repeating: nil, count: services.count)
        self.fromConfig = Array(repeating: true, count: services.count)
    }

    public func database(deviceName: String, appearance: UInt16) -> GATTDatabase {
        GATTDatabase(deviceName: deviceName, appearance: appearance, services: services, placements: placements)
    }

    public enum Refusal: Error, Equatable, Sendable {
        /// The table would go past handle 0xFFFF.
        case noHandlesLeft(needed: Int)
        case unknownService(String)
        /// Another service includes it.
        case included(by: String)
    }

    /// Adds `service` after the last handle of `current` (the database built from this layout),
    /// or at `start` when that is past it (a service put back where it was before a restart,
    /// its handles unchanged). Returns its first handle.
    @discardableResult
    public mutating func add(_ service: ServiceDefinition, after current: GATTDatabase, at requested: UInt16? = nil) throws(Refusal) -> UInt16 {
        let start = max(Int(current.lastHandle.rawValue) + 1, requested.map(Int.init) ?? 0)
        var placements = self.placements
        // Pin every existing service where it is now, so nothing moves.
        for (i, s) in current.services.dropFirst(GATTDatabase.builtInServiceCount).enumerated() where i < placements.count {
            placements[i] = s.handle.rawValue
        }
        let end = GATTDatabase.layoutEnd(services + [service], placements: placements + [UInt16(truncatingIfNeeded: start)])
        guard start <= 0xFFFF, end <= 0x1_0000 else { throw .noHandlesLeft(needed: end - start) }
        self.services.append(service)
        self.placements = placements + [UInt16(start)]
        self.fromConfig.append(false)
        return UInt16(start)
    }

    /// Removes the service with config id `id` (its handles become a gap).
    public mutating func remove(id: String, current: GATTDatabase) throws(Refusal) {
        guard let i = services.firstIndex(where: { $0.id == id }) else { throw .unknownService(id) }
        if let j = services.indices.first(where: { services[$0].includes.contains(i) }) {
            throw .included(by: services[j].id ?? services[j].uuid.description)
        }
        for (k, s) in current.services.dropFirst(GATTDatabase.builtInServiceCount).enumerated() where k < placements.count {
            placements[k] = s.handle.rawValue
        }
        services.remove(at: i)
        placements.remove(at: i)
        fromConfig.remove(at: i)
        for k in services.indices { services[k].includes = services[k].includes.compactMap { $0 == i ? nil : $0 > i ? $0 - 1 : $0 } }
    }
}
