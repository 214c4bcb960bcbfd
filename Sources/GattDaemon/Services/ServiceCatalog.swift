import GattControlProtocol
import GattCore
import Logging

/// The services served: the config's, and those programs added at run time, with where their
/// handles are (`ServiceLayout`: handles never move), and which runtime ones this run put back
/// from the saved state. Sans-I/O: it proposes layouts; the daemon keeps what a restart puts
/// back (`RestorationCoordinator`) before it serves one.
struct ServiceCatalog {
    private(set) var layout: ServiceLayout
    /// First handles of the runtime services put back from the saved state at start (not added
    /// by this run).
    private(set) var restored: Set<UInt16>

    /// `config`'s services with the saved runtime services after them, each at its saved first
    /// handle when that is still free (else after the last handle: a log line says it moved); a
    /// saved service that no longer fits the database (an id the config now uses) is dropped
    /// with a warning. Returns the catalog and the saved state as it now is.
    static func restoring(
        _ config: GattConfiguration, _ saved: RestoredState, l2capChannels: [L2CAPChannelConfiguration], expander: (any ServiceExpander)?,
        logger: Logger
    ) -> (ServiceCatalog, RestoredState) {
        var layout = ServiceLayout(config: config.services)
        var state = saved
        state.services = []
        var restored: Set<UInt16> = []
        for s in saved.services {
            let db = layout.database(deviceName: config.name, appearance: config.appearance)
            let name = s.id ?? "at \(AttributeHandle(s.start))"
            guard let json = try? JSONParser.parse(Array(s.definition.text.utf8)) else { continue }
            switch RuntimeService.parse(json, in: db, l2capChannels: l2capChannels, expander: expander) {
            case .failure(let errors):
                logger.warning("runtime service \(name) not restored: \(errors.lines().joined(separator: "; "))")
            case .success(let definition):
                do {
                    let start = try layout.add(definition, after: db, at: s.start)
                    if start != s.start {
                        logger.warning("runtime service \(name) restored at \(AttributeHandle(start)), not \(AttributeHandle(s.start)): the config's services now reach past it")
                    }
                    state.services.append(.init(start: start, definition: s.definition, id: s.id))
                    restored.insert(start)
                } catch {
                    logger.warning("runtime service \(name) not restored: \(describe(error))")
                }
            }
        }
        return (ServiceCatalog(layout: layout, restored: restored), state)
    }

    /// A reload's services (those this run restored at start still say so).
    mutating func reloaded(_ new: ServiceCatalog) { layout = new.layout }

    /// The database of the layout, named and with the appearance of `config`.
    func database(_ config: GattConfiguration) -> GATTDatabase {
        layout.database(deviceName: config.name, appearance: config.appearance)
    }

    /// `add_service`: the definition checked against `database` and placed after it. Returns the
    /// catalog with it and its saved form, or the error the program gets.
    func adding(
        _ json: JSONValue, to database: GATTDatabase, l2capChannels: [L2CAPChannelConfiguration], expander: (any ServiceExpander)?
    ) -> Result<(ServiceCatalog, RestoredState.Service), ControlError> {
        let definition: ServiceDefinition
        switch RuntimeService.parse(json, in: database, l2capChannels: l2capChannels, expander: expander) {
        case .failure(let errors): return .failure(ControlError(.invalidValue, errors.lines().joined(separator: "; ")))
        case .success(let d): definition = d
        }
        var new = self
        do {
            let start = try new.layout.add(definition, after: database)
            return .success((new, .init(start: start, definition: JSONText(json), id: definition.id)))
        } catch {
            return .failure(ControlError(.invalidValue, Self.describe(error)))
        }
    }

    /// `remove_service`: the catalog without the runtime service `id`, or the error the program gets.
    func removing(_ id: String, from database: GATTDatabase) -> Result<ServiceCatalog, ControlError> {
        var new = self
        do {
            try new.layout.remove(id: id, current: database)
            return .success(new)
        } catch {
            return .failure(ControlError(.unknownService, Self.describe(error)))
        }
    }

    /// The services of `database` after GAP and GATT, with their handles.
    func list(_ database: GATTDatabase) -> [ControlService] {
        database.services.dropFirst(GATTDatabase.builtInServiceCount).enumerated().map { i, s in
            ControlService(
                id: s.id, uuid: s.uuid.description, start: Int(s.handle.rawValue), end: Int(s.endHandle.rawValue),
                runtime: i < layout.fromConfig.count && !layout.fromConfig[i],
                restored: restored.contains(s.handle.rawValue),
                profile: i < layout.services.count ? layout.services[i].profile : nil)
        }
    }

    /// The service that publishes the PSM of the app's L2CAP channel `id`, if one does.
    func publishing(l2capChannel id: String) -> ServiceDefinition? {
        layout.services.first { $0.characteristics.contains { $0.l2capChannel == id } }
    }

    static func describe(_ r: ServiceLayout.Refusal) -> String {
        switch r {
        case .noHandlesLeft(let n): "the service needs \(n) handles and the database has no room for them after its last handle"
        case .unknownService(let id): "no service with id \"\(id)\" (services without an id cannot be removed)"
        case .included(let by): "the service is included by \(by); remove that one first"
        }
    }
}
