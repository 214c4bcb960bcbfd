import GattCore

// Bonded centrals' GATT state (`BondCoordinator`), given to the core and kept after it changes.
extension PeripheralDaemon {
    /// At start: the saved states of the bonds kept, each owed a Service Changed for what
    /// changed in the database since gattd last served it.
    func loadClientStates() { bondCoordinator.loadClientStates(serving: core.database) }

    /// After a reload: bonds away learn of the change on their next connection.
    func reloadedClientStates(before: [ServiceFingerprint]) { bondCoordinator.reloaded(from: before, to: core.database) }

    /// The link of `c` is encrypted (or, with `security.restore_without_encryption`, its RPA
    /// is resolved by a bond's IRK): when it is a bonded central, its state comes back
    /// (notifications flow again without a CCCD write; a Service Changed owed is indicated).
    func recogniseBondedCentral(_ c: PeripheralConnection) {
        guard
            let (identity, state) = bondCoordinator.recognise(
                c.id, address: c.address, encrypted: c.security.isEncrypted, resolvedIsEnough: settings.restoreWithoutEncryption)
        else { return }
        guard let state else { return core.setBonded(c.id) }
        let n = state.clientConfigurations.count
        logger.info("\(c.address): bonded central \(identity); restored \(n) subscription\(n == 1 ? "" : "s")\(state.serviceChangedOwed.map { ", Service Changed \($0) owed" } ?? "")")
        process(core.restoreClientState(c.id, state, now: now))
        announceRestoredSubscriptions(c)
    }

    /// Watchers hear a restored subscription as they hear a new one (`subscribed`, as Core
    /// Bluetooth's didSubscribeTo on a bonded central's return): a program that serves
    /// subscribers (a console profile) starts serving it, though the central wrote no CCCD.
    private func announceRestoredSubscriptions(_ c: PeripheralConnection) {
        guard let handler = controlEventHandler else { return }
        let db = core.database
        for i in db.characteristicIndices {
            let bits = core.att.clientConfiguration(for: c.id, characteristic: i) ?? 0
            guard bits & 0x0003 != 0 else { continue }
            handler(.subscription(central: c.address.description, characteristic: db[i].displayName, notify: bits & 0x0001 != 0, indicate: bits & 0x0002 != 0))
        }
    }

    /// After each batch of core work: the state of every connected bonded central, saved
    /// when it changed.
    func syncClientStates() {
        guard !bondCoordinator.bondedConnections.isEmpty else { return }
        bondCoordinator.sync { core.clientState(for: $0) }
    }

    /// A commit's client state (a bonded central's CCCD or Client Supported Features write):
    /// saved for its bond; false when it could not be written.
    func saveBondedClientState(_ id: ConnectionID, _ state: GATTClientState) -> Bool {
        bondCoordinator.commitClientState(state, of: id)
    }
}
