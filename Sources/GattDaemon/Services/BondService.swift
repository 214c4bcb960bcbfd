import GattCore
import GattTransport

/// Bonds on the daemon's side (`BondCoordinator`, which owns `<state-dir>/bonds`): the bonds
/// given to the transport, a pairing's bond kept before it is announced, bonded centrals
/// recognised (their GATT state back: subscriptions, a Service Changed owed, a signing key),
/// their state kept as it changes, and `gattctl bonds`/`unbond`.
final class BondService {
    private unowned let context: DaemonContext
    private var coordinator: BondCoordinator
    /// Where the transport keeps keys besides the set it is given (bluetoothd's, the kernel's).
    private let transport: any PeripheralTransport

    init(context: DaemonContext, stateDirectory: String?, transport: any PeripheralTransport) {
        self.context = context
        self.coordinator = BondCoordinator(stateDirectory: stateDirectory, logger: context.logger)
        self.transport = transport
    }

    private var core: Peripheral {
        get { context.core }
        _modify { yield &context.core }
    }

    // MARK: - The transport's bonds

    /// Reads the bond store and gives its bonds to the transport (at start); then the saved
    /// GATT states of the bonds kept, each owed a Service Changed for what changed in the
    /// database since gattd last served it.
    func load() {
        let (bonds, irk) = coordinator.load()
        if coordinator.store != nil {
            give(bonds)
            if let irk { context.stack.setLocalIRK(irk, now: context.now) }
        }
        coordinator.loadClientStates(serving: core.database)
    }

    /// The bonds to encrypt reconnecting centrals with, down to the half below the seam.
    private func give(_ bonds: [Bond]) { context.stack.setBonds(bonds, now: context.now) }

    /// A pairing with bonding completed on `c`: the bond is kept (durable) and given to the
    /// transport, and the link counts as bonded.
    func paired(_ bond: Bond, on c: PeripheralConnection, maxBonds: Int?) {
        give(coordinator.save(bond, maxBonds: maxBonds))
        coordinator.bonded(c.id, identity: bond.address, signs: bond.peerCSRK != nil)
        core.setBonded(c.id)
        context.logger.info("\(c.address): paired and bonded as \(bond.address) (\(PairingService.kind(of: bond)))")
    }

    /// The bond whose IRK resolves `address` when it is a resolvable private address.
    func resolving(_ address: BluetoothAddress) -> Bond? { coordinator.resolving(address) }

    /// The bonds, oldest first.
    var list: [StoredBond] { coordinator.bonds }

    /// Forgets the bond of `address` (its file, the transport's copy) and disconnects the
    /// central if it is connected (by that address or an RPA its IRK resolves), so it must
    /// pair again. False when there is no such bond.
    func unbond(_ address: BluetoothAddress) -> Bool {
        guard let bond = coordinator.remove(address) else { return false }
        transport.removeBond(bond)
        give(coordinator.bonds.map(\.bond))
        let linked = core.connections.values.filter { $0.address == address || bond.resolves($0.address) }
        for c in linked.sorted(by: { $0.id.rawValue < $1.id.rawValue }) { context.process(core.disconnect(c.id)) }
        return true
    }

    // MARK: - Bonded centrals

    /// A bonded central that distributed a CSRK connected: its signed writes verify on this
    /// link, counters at or below the stored one refused (Core Spec Vol 3 Part C §10.4).
    func restoreSigningKey(_ c: PeripheralConnection) {
        guard let key = coordinator.signingKey(for: c.id, address: c.address) else { return }
        core.setSigningKey(c.id, csrk: key.csrk, lastSignCounter: key.lastSignCounter)
    }

    /// The link's security changed: an encrypted bonded central is seen now, and recognised.
    func securityChanged(_ c: PeripheralConnection, resolvedIsEnough: Bool) {
        if c.security.isEncrypted { coordinator.seen(c.address) }
        recognise(c, resolvedIsEnough: resolvedIsEnough)
    }

    /// The central left.
    func disconnected(_ id: ConnectionID) { coordinator.closed(id) }

    /// A Write Command or Signed Write was served: a signing central's counter is kept.
    func written(by id: ConnectionID) {
        if coordinator.isSigning(id) { coordinator.keepSignCounter(id, core.att.signCounter(for: id)) }
    }

    /// The link of `c` is encrypted (or, with `resolvedIsEnough`, the config's
    /// `security.restore_without_encryption`, its RPA is resolved by a bond's IRK): when it is
    /// a bonded central, its state comes back (notifications flow again without a CCCD write;
    /// a Service Changed owed is indicated).
    func recognise(_ c: PeripheralConnection, resolvedIsEnough: Bool) {
        guard
            let (identity, state) = coordinator.recognise(
                c.id, address: c.address, encrypted: c.security.isEncrypted, resolvedIsEnough: resolvedIsEnough)
        else { return }
        guard let state else { return core.setBonded(c.id) }
        let n = state.clientConfigurations.count
        context.logger.info("\(c.address): bonded central \(identity); restored \(n) subscription\(n == 1 ? "" : "s")\(state.serviceChangedOwed.map { ", Service Changed \($0) owed" } ?? "")")
        context.process(core.restoreClientState(c.id, state, now: context.now))
        announceRestoredSubscriptions(c)
    }

    /// Watchers hear a restored subscription as they hear a new one (`subscribed`, as Core
    /// Bluetooth's didSubscribeTo on a bonded central's return): a program that serves
    /// subscribers (a console profile) starts serving it, though the central wrote no CCCD.
    private func announceRestoredSubscriptions(_ c: PeripheralConnection) {
        guard context.controlEventHandler != nil else { return }
        let db = core.database
        for i in db.characteristicIndices {
            let bits = core.att.clientConfiguration(for: c.id, characteristic: i) ?? 0
            guard bits & 0x0003 != 0 else { continue }
            context.emit(.subscription(central: c.address.description, characteristic: db[i].displayName, notify: bits & 0x0001 != 0, indicate: bits & 0x0002 != 0))
        }
    }

    // MARK: - Their GATT state

    /// After a reload or a runtime service: bonds away learn of the change on their next connection.
    func databaseChanged(before: [ServiceFingerprint]) { coordinator.reloaded(from: before, to: core.database) }

    /// After each batch of core work: the state of every connected bonded central, saved
    /// when it changed.
    func sync() {
        guard !coordinator.bondedConnections.isEmpty else { return }
        let core = context.core
        coordinator.sync { core.clientState(for: $0) }
    }

    /// A commit's client state (a bonded central's CCCD or Client Supported Features write):
    /// saved for its bond; false when it could not be written.
    func commit(_ state: GATTClientState, of id: ConnectionID) -> Bool {
        coordinator.commitClientState(state, of: id)
    }
}
