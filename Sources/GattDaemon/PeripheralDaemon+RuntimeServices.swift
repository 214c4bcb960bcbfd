import GattControlProtocol
import GattCore

// Services added and removed while gattd runs. Handles never move (ServiceLayout); every
// change indicates Service Changed for exactly the service's range and updates the Database
// Hash; bonded centrals away are owed it. With state restoration (a state directory, on by
// default) a runtime service is kept in `<state-dir>/restore.json` before `add_service` is
// answered, and comes back at the same handles after a restart or a SIGHUP reload;
// `remove_service` removes it for good. Without it, runtime services last until gattd stops
// or reloads, and the program that added them adds them again.
extension PeripheralDaemon: RuntimeServiceControl {
    public func runServiceCommand(_ command: ControlCommand) -> ControlReply {
        switch command {
        case .listServices:
            return .services(serviceList())
        case .addService(let json):
            let definition: ServiceDefinition
            switch RuntimeService.parse(json, in: core.database, l2capChannels: l2capChannels.channels, expander: options.serviceExpander) {
            case .failure(let errors):
                return .failure(ControlError(.invalidValue, errors.lines().joined(separator: "; ")))
            case .success(let d): definition = d
            }
            var layout = serviceLayout
            let start: UInt16
            do {
                start = try layout.add(definition, after: core.database)
            } catch {
                return .failure(ControlError(.invalidValue, Self.describe(error)))
            }
            var state = restoration.state
            state.services.append(.init(start: start, definition: JSONText(json), id: definition.id))
            do {
                try restoration.save(state)
            } catch {
                return .failure(ControlError(.persistFailed, "\(error); the service is not added"))
            }
            apply(layout)
            guard let added = serviceList().last else { return .success }
            logger.info("service \(added.id ?? added.uuid) added at runtime: handles \(AttributeHandle(UInt16(added.start)))-\(AttributeHandle(UInt16(added.end)))")
            return .services([added])
        case .removeService(let id):
            let old = serviceList().first { $0.id == id }
            var layout = serviceLayout
            do {
                try layout.remove(id: id, current: core.database)
            } catch {
                return .failure(ControlError(.unknownService, Self.describe(error)))
            }
            var state = restoration.state
            state.services.removeAll { $0.id == id }
            do {
                try restoration.save(state)
            } catch {
                return .failure(ControlError(.persistFailed, "\(error); the service is not removed"))
            }
            apply(layout)
            if let old {
                logger.info("service \(id) removed at runtime: handles \(AttributeHandle(UInt16(old.start)))-\(AttributeHandle(UInt16(old.end))) left unused")
            }
            return .success
        default:
            return .failure(ControlError(.unknownOp, "\(command.op) is not a service op"))
        }
    }

    /// Serves `layout`'s database (values of characteristics that stay carry over; persisted
    /// values come from the store), indicating Service Changed for what changed.
    private func apply(_ layout: ServiceLayout) {
        serviceLayout = layout
        var database = layout.database(deviceName: configuration.name, appearance: configuration.appearance)
        persisted?.apply(to: &database)
        let before = core.database.serviceFingerprints
        process(core.reload(database: database, payloads: core.payloads, otherSets: core.otherSets, maxConnections: configuration.advertising.maxConnections, now: now))
        bonds.databaseChanged(before: before)
        transport.serveDatabase(core.database)
    }

    /// The services after GAP and GATT, with their handles.
    func serviceList() -> [ControlService] {
        let db = core.database
        return db.services.dropFirst(GATTDatabase.builtInServiceCount).enumerated().map { i, s in
            ControlService(
                id: s.id, uuid: s.uuid.description, start: Int(s.handle.rawValue), end: Int(s.endHandle.rawValue),
                runtime: i < serviceLayout.fromConfig.count && !serviceLayout.fromConfig[i],
                restored: restoredServices.contains(s.handle.rawValue),
                profile: i < serviceLayout.services.count ? serviceLayout.services[i].profile : nil)
        }
    }

    static func describe(_ r: ServiceLayout.Refusal) -> String {
        switch r {
        case .noHandlesLeft(let n): "the service needs \(n) handles and the database has no room for them after its last handle"
        case .unknownService(let id): "no service with id \"\(id)\" (services without an id cannot be removed)"
        case .included(let by): "the service is included by \(by); remove that one first"
        }
    }
}
