import GattControlProtocol
import GattCore

// Services added and removed while gattd runs (`ServiceCatalog`). Handles never move; every
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
            return .services(services.list(core.database))
        case .addService(let json):
            let new: ServiceCatalog, saved: RestoredState.Service
            switch services.adding(json, to: core.database, l2capChannels: l2capChannels.channels, expander: options.serviceExpander) {
            case .failure(let e): return .failure(e)
            case .success(let s): (new, saved) = s
            }
            var state = restoration.state
            state.services.append(saved)
            do {
                try restoration.save(state)
            } catch {
                return .failure(ControlError(.persistFailed, "\(error); the service is not added"))
            }
            serve(new)
            guard let added = services.list(core.database).last else { return .success }
            logger.info("service \(added.id ?? added.uuid) added at runtime: handles \(AttributeHandle(UInt16(added.start)))-\(AttributeHandle(UInt16(added.end)))")
            return .services([added])
        case .removeService(let id):
            let old = services.list(core.database).first { $0.id == id }
            let new: ServiceCatalog
            switch services.removing(id, from: core.database) {
            case .failure(let e): return .failure(e)
            case .success(let s): new = s
            }
            var state = restoration.state
            state.services.removeAll { $0.id == id }
            do {
                try restoration.save(state)
            } catch {
                return .failure(ControlError(.persistFailed, "\(error); the service is not removed"))
            }
            serve(new)
            if let old {
                logger.info("service \(id) removed at runtime: handles \(AttributeHandle(UInt16(old.start)))-\(AttributeHandle(UInt16(old.end))) left unused")
            }
            return .success
        default:
            return .failure(ControlError(.unknownOp, "\(command.op) is not a service op"))
        }
    }

    /// Serves `catalog`'s database (values of characteristics that stay carry over; persisted
    /// values come from the store), indicating Service Changed for what changed.
    private func serve(_ catalog: ServiceCatalog) {
        services = catalog
        var database = catalog.database(configuration)
        persistence.values?.apply(to: &database)
        let before = core.database.serviceFingerprints
        process(core.reload(database: database, payloads: core.payloads, otherSets: core.otherSets, maxConnections: configuration.advertising.maxConnections, now: now))
        bonds.databaseChanged(before: before)
        transport.serveDatabase(core.database)
    }
}
