import GattCore

// Bonded centrals' GATT state (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3): CCCDs, Client
// Supported Features, change awareness and a Service Changed owed, kept per bond identity
// address in `<state-dir>/bonds/<address>.gatt` whatever the transport. A central is
// recognised as bonded when its link is encrypted and its address is a bond's identity
// address or an RPA that a bond's IRK resolves.
extension PeripheralDaemon {
    /// The bond identity of a central address (its own, or the bond whose IRK resolves it).
    func bondIdentity(of address: BluetoothAddress) -> BluetoothAddress? {
        if bonds.contains(where: { $0.bond.address == address }) { return address }
        return bondResolving(address)?.address
    }

    /// At start: the saved states of the bonds kept, each owed a Service Changed for what
    /// changed in the database since gattd last served it (a new config on restart).
    func loadClientStates() {
        guard let store = clientStateStore else { return }
        let (loaded, problems) = store.load()
        for p in problems { logger.warning("\(p)") }
        let known = Set(bonds.map(\.bond.address))
        clientStates = loaded.filter { known.contains($0.key) }
        let db = core.database
        let fingerprints = db.serviceFingerprints
        let old = store.loadLayout()
        let change: HandleRange? = old.map { GATTDatabase.changedRange(from: $0, to: fingerprints) } ?? (clientStates.isEmpty ? nil : .all)
        if let change { databaseChanged(over: change, connected: []) }
        if old != fingerprints {
            do { try store.saveLayout(fingerprints) } catch { logger.error("\(error)") }
        }
    }

    /// The database changed over `range`: every bond not connected now (`connected`) that
    /// was change-aware of another database is owed a Service Changed, durably.
    func databaseChanged(over range: HandleRange, connected: Set<BluetoothAddress>) {
        let hash = core.database.databaseHash
        for (address, state) in clientStates.sorted(by: { $0.key.description < $1.key.description }) where !connected.contains(address) {
            var s = state
            s.databaseChanged(to: hash, range: range)
            guard s != state else { continue }
            saveClientState(address, s)
            logger.info("\(address): Service Changed \(s.serviceChangedOwed ?? .all) owed (the database changed while it was away)")
        }
    }

    /// After a reload: bonds away learn of the change on their next connection.
    func reloadedClientStates(before: [ServiceFingerprint]) {
        let after = core.database.serviceFingerprints
        guard let range = GATTDatabase.changedRange(from: before, to: after) else { return }
        databaseChanged(over: range, connected: Set(bondedConnections.values))
        do { try clientStateStore?.saveLayout(after) } catch { logger.error("\(error)") }
    }

    /// The link of `c` is encrypted (or, with `security.restore_without_encryption`, its RPA
    /// is resolved by a bond's IRK): when it is a bonded central, its state comes back
    /// (notifications flow again without a CCCD write; a Service Changed owed is indicated).
    func recogniseBondedCentral(_ c: PeripheralConnection) {
        let resolved = configuration.restoreWithoutEncryption && bondResolving(c.address) != nil
        guard c.security.isEncrypted || resolved, bondedConnections[c.id] == nil, let identity = bondIdentity(of: c.address) else { return }
        bondedConnections[c.id] = identity
        if let state = clientStates[identity] {
            let n = state.clientConfigurations.count
            logger.info("\(c.address): bonded central \(identity); restored \(n) subscription\(n == 1 ? "" : "s")\(state.serviceChangedOwed.map { ", Service Changed \($0) owed" } ?? "")")
            process(core.restoreClientState(c.id, state, now: now))
        } else {
            core.setBonded(c.id)
        }
    }

    /// `c` just bonded as `identity`: its current state is kept from now on.
    func centralBonded(_ c: PeripheralConnection, identity: BluetoothAddress) {
        bondedConnections[c.id] = identity
        core.setBonded(c.id)
    }

    /// After each batch of core work: the state of every connected bonded central, saved
    /// when it changed (subscriptions by Write Command, change awareness, features).
    func syncClientStates() {
        guard !bondedConnections.isEmpty else { return }
        for (id, address) in bondedConnections.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            guard let s = core.clientState(for: id), s != clientStates[address] else { continue }
            saveClientState(address, s)
        }
    }

    /// Keeps `state` for the bond (durable when there is a state directory); false when it could not be written.
    @discardableResult
    func saveClientState(_ address: BluetoothAddress, _ state: GATTClientState) -> Bool {
        clientStates[address] = state
        guard let store = clientStateStore else { return true }
        do {
            try store.save(address, state)
            return true
        } catch {
            logger.error("\(error); the GATT state of \(address) lasts only until gattd stops")
            return false
        }
    }

    /// A commit's client state (a bonded central's CCCD or Client Supported Features write):
    /// saved for its bond; false when it could not be written.
    func saveBondedClientState(_ id: ConnectionID, _ state: GATTClientState) -> Bool {
        guard let address = bondedConnections[id] else { return true }
        return saveClientState(address, state)
    }

    /// A bond removed: its GATT state goes too.
    func forgetClientState(_ address: BluetoothAddress) {
        clientStates[address] = nil
        do { try clientStateStore?.remove(address) } catch { logger.error("\(error)") }
    }
}
