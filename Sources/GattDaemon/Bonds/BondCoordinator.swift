import GattCore
import Logging

/// Bonds and what they keep across connections and restarts, in one place: owns
/// `<state-dir>/bonds/` (`BondStore`: a file per bond and the local IRK; `ClientStateStore`:
/// a `.gatt` file per bond's GATT state and the served database's layout) and knows which
/// connection is which bond. Without a state directory all of it lasts until gattd stops.
///
/// It touches nothing but its files: the daemon gives the transport and the core what its
/// methods return. Every method runs on the daemon's event loop.
struct BondCoordinator {
    let store: BondStore?
    let clientStateStore: ClientStateStore?
    let logger: Logger
    /// The bonds, oldest first, as the transport was last given them.
    private(set) var bonds: [StoredBond] = []
    /// Each bond's GATT state (Vol 3 Part G §2.5.2.1, §3.3.3.3), by identity address.
    private(set) var clientStates: [BluetoothAddress: GATTClientState] = [:]
    /// Connections recognised as bonded centrals, with their bond identity address.
    private(set) var bondedConnections: [ConnectionID: BluetoothAddress] = [:]
    /// Connections whose signed writes verify with a bond's CSRK: the bond's identity address.
    private(set) var signingConnections: [ConnectionID: BluetoothAddress] = [:]

    init(stateDirectory: String?, logger: Logger) {
        store = stateDirectory.map { BondStore(stateDirectory: $0) }
        clientStateStore = stateDirectory.map { ClientStateStore(stateDirectory: $0) }
        self.logger = logger
    }

    // MARK: Bonds (Vol 3 Part H §2.4.1: keys kept for a later connection)

    /// Reads the bond store (at start); the bonds and the local IRK for the transport
    /// (nil: no store, or the IRK could not be kept).
    mutating func load() -> (bonds: [Bond], localIRK: [UInt8]?) {
        guard let store else { return ([], nil) }
        let (loaded, problems) = store.load()
        for p in problems { logger.warning("\(p)") }
        bonds = loaded
        if !loaded.isEmpty { logger.info("loaded \(loaded.count) bond\(loaded.count == 1 ? "" : "s") from \(store.directory.path)") }
        do {
            let (irk, problem) = try store.localIRK()
            if let problem { logger.warning("\(problem)") }
            return (loaded.map(\.bond), irk)
        } catch {
            logger.error("\(error); our identity (IRK) lasts only until gattd stops")
            return (loaded.map(\.bond), nil)
        }
    }

    /// The bond whose IRK resolves `address` when it is a resolvable private address
    /// (Vol 6 Part B §1.3.2.3), not the bond's own identity address.
    func resolving(_ address: BluetoothAddress) -> Bond? {
        bonds.lazy.map(\.bond).first { $0.address != address && $0.resolves(address) }
    }

    /// The bond identity of a central address (its own, or the bond whose IRK resolves it).
    func identity(of address: BluetoothAddress) -> BluetoothAddress? {
        if bonds.contains(where: { $0.bond.address == address }) { return address }
        return resolving(address)?.address
    }

    private func stored(matching address: BluetoothAddress) -> Int? {
        bonds.firstIndex { $0.bond.address == address || $0.bond.resolves(address) }
    }

    /// Keeps a completed bond: written durably before the pairing is reported complete, the
    /// oldest evicted beyond `maxBonds` (with their GATT state). Returns the bonds for the transport.
    mutating func save(_ bond: Bond, maxBonds: Int?) -> [Bond] {
        let stored = StoredBond(bond: bond, created: BondStore.unixTime())
        bonds.removeAll { $0.bond.address == bond.address }
        bonds.append(stored)
        if let store {
            do {
                try store.save(stored)
            } catch {
                logger.error("\(error); the bond lasts only until gattd stops")
            }
        }
        if let maxBonds, bonds.count > maxBonds {
            for old in bonds.prefix(bonds.count - maxBonds) {
                removeFiles(old.bond.address)
                logger.info("\(old.bond.address): bond evicted (max_bonds \(maxBonds))")
            }
            bonds.removeFirst(bonds.count - maxBonds)
        }
        return bonds.map(\.bond)
    }

    /// Forgets the bond of `address` and its GATT state; the bond removed, nil when there was none.
    mutating func remove(_ address: BluetoothAddress) -> Bond? {
        guard let stored = bonds.first(where: { $0.bond.address == address }) else { return nil }
        bonds.removeAll { $0.bond.address == address }
        removeFiles(address)
        logger.info("\(address): bond removed")
        return stored.bond
    }

    private mutating func removeFiles(_ address: BluetoothAddress) {
        do { try store?.remove(address) } catch { logger.error("\(error)") }
        clientStates[address] = nil
        do { try clientStateStore?.remove(address) } catch { logger.error("\(error)") }
    }

    /// A bonded central encrypted its link: `last_seen` in its bond file (a failure to write
    /// it only costs the date, so it is logged and nothing else).
    mutating func seen(_ address: BluetoothAddress) {
        guard let i = stored(matching: address) else { return }
        bonds[i].lastSeen = BondStore.unixTime()
        do {
            try store?.save(bonds[i])
        } catch {
            logger.warning("\(error); the bond's last-seen time is not updated")
        }
    }

    // MARK: Signed writes (Vol 3 Part C §10.4)

    /// A bonded central (by identity address or an RPA its IRK resolves) that distributed a
    /// CSRK: its key and last Sign Counter for the link, which is remembered as signing.
    mutating func signingKey(for id: ConnectionID, address: BluetoothAddress) -> (csrk: [UInt8], lastSignCounter: UInt32?)? {
        guard let i = stored(matching: address), let csrk = bonds[i].bond.peerCSRK else { return nil }
        signingConnections[id] = bonds[i].bond.address
        return (csrk, bonds[i].peerSignCounter)
    }

    /// `id` just bonded as `identity` (with a CSRK or not): its GATT state is kept from now on.
    mutating func bonded(_ id: ConnectionID, identity: BluetoothAddress, signs: Bool) {
        bondedConnections[id] = identity
        if signs { signingConnections[id] = identity }
    }

    /// A newer accepted Sign Counter on a signing link is written to the bond, so a replay is
    /// refused after a restart too.
    mutating func keepSignCounter(_ id: ConnectionID, _ counter: UInt32?) {
        guard let identity = signingConnections[id], let counter,
            let i = bonds.firstIndex(where: { $0.bond.address == identity }), bonds[i].peerSignCounter != counter
        else { return }
        bonds[i].peerSignCounter = counter
        do {
            try store?.save(bonds[i])
        } catch {
            logger.error("\(error); the sign counter of \(identity) lasts only until gattd stops")
        }
    }

    func isSigning(_ id: ConnectionID) -> Bool { signingConnections[id] != nil }

    /// The link is gone.
    mutating func closed(_ id: ConnectionID) {
        signingConnections[id] = nil
        bondedConnections[id] = nil
    }
}

// Bonded centrals' GATT state (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3): CCCDs, Client
// Supported Features, change awareness and a Service Changed owed, kept per bond identity
// address in `<state-dir>/bonds/<address>.gatt` whatever the transport. A central is
// recognised as bonded when its link is encrypted and its address is a bond's identity
// address or an RPA that a bond's IRK resolves.
extension BondCoordinator {
    /// At start, after `load()`: the saved states of the bonds kept, each owed a Service
    /// Changed for what changed in `database` since gattd last served it (a new config).
    mutating func loadClientStates(serving database: GATTDatabase) {
        guard let store = clientStateStore else { return }
        let (loaded, problems) = store.load()
        for p in problems { logger.warning("\(p)") }
        let known = Set(bonds.map(\.bond.address))
        clientStates = loaded.filter { known.contains($0.key) }
        let fingerprints = database.serviceFingerprints
        let old = store.loadLayout()
        let change: HandleRange? = old.map { GATTDatabase.changedRange(from: $0, to: fingerprints) } ?? (clientStates.isEmpty ? nil : .all)
        if let change { databaseChanged(to: database.databaseHash, over: change) }
        if old != fingerprints {
            do { try store.saveLayout(fingerprints) } catch { logger.error("\(error)") }
        }
    }

    /// After a reload from `before`: bonds away learn of the change on their next connection.
    mutating func reloaded(from before: [ServiceFingerprint], to database: GATTDatabase) {
        let after = database.serviceFingerprints
        guard let range = GATTDatabase.changedRange(from: before, to: after) else { return }
        databaseChanged(to: database.databaseHash, over: range)
        do { try clientStateStore?.saveLayout(after) } catch { logger.error("\(error)") }
    }

    /// The database changed over `range`: every bond not connected now that was change-aware
    /// of another database is owed a Service Changed, durably.
    private mutating func databaseChanged(to hash: [UInt8], over range: HandleRange) {
        let connected = Set(bondedConnections.values)
        for (address, state) in clientStates.sorted(by: { $0.key.description < $1.key.description }) where !connected.contains(address) {
            var s = state
            s.databaseChanged(to: hash, range: range)
            guard s != state else { continue }
            save(address, s)
            logger.info("\(address): Service Changed \(s.serviceChangedOwed ?? .all) owed (the database changed while it was away)")
        }
    }

    /// The link `id` to `address` is encrypted (or `resolvedIsEnough` and a bond's IRK resolves
    /// its RPA): when it is a bonded central not recognised yet, its identity and the state it
    /// left (nil: none kept yet).
    mutating func recognise(_ id: ConnectionID, address: BluetoothAddress, encrypted: Bool, resolvedIsEnough: Bool)
        -> (identity: BluetoothAddress, state: GATTClientState?)?
    {
        let resolved = resolvedIsEnough && resolving(address) != nil
        guard encrypted || resolved, bondedConnections[id] == nil, let identity = identity(of: address) else { return nil }
        bondedConnections[id] = identity
        return (identity, clientStates[identity])
    }

    /// The state of every connected bonded central as the core has it now, saved where it
    /// changed (subscriptions by Write Command, change awareness, features).
    mutating func sync(_ current: (ConnectionID) -> GATTClientState?) {
        guard !bondedConnections.isEmpty else { return }
        for (id, address) in bondedConnections.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            guard let s = current(id), s != clientStates[address] else { continue }
            save(address, s)
        }
    }

    /// A bonded central's CCCD or Client Supported Features write, to be acknowledged once
    /// durable: false when it could not be written (a connection not recognised as a bond
    /// keeps nothing, and succeeds).
    mutating func commitClientState(_ state: GATTClientState, of id: ConnectionID) -> Bool {
        guard let address = bondedConnections[id] else { return true }
        return save(address, state)
    }

    /// Keeps `state` for the bond (durable when there is a state directory); false when it could not be written.
    @discardableResult
    mutating func save(_ address: BluetoothAddress, _ state: GATTClientState) -> Bool {
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
}
