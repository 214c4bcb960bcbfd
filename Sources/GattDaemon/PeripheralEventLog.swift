import GattCore
import Logging

/// The log lines every back end writes for the same peripheral events, one function per
/// event, so that a line reads the same whatever the transport (tests and users grep them).
struct PeripheralEventLog {
    let logger: Logger

    /// Advertising went on (saying what scanners see: the name as advertised, whether it
    /// is shortened, which UUID lists are complete) or off.
    func advertising(_ on: Bool, _ payloads: AdvertisingPayloads) {
        logger.info(on ? "\(payloads.facts.logDescription(beaconOnly: payloads.isBeaconOnly))" : "advertising stopped")
    }

    /// One ATT PDU, at debug level: `C0:00:00:00:00:01 → Read Request handle 0x0012` from
    /// the central, `… ← Read Response "hello" (5 B)` to it. Nothing is built (not even
    /// `central`) unless debug is enabled.
    func attPDU(_ pdu: [UInt8], sent: Bool, central: @autoclosure () -> String) {
        guard logger.logLevel <= .debug else { return }
        logger.debug("\(central()) \(sent ? "←" : "→") \(ATTPDU.logDescription(of: pdu))")
    }

    /// A central connected; `handle` nil when the transport did not tell it.
    func connected(_ address: BluetoothAddress, type: String, handle: UInt16?) {
        logger.info("connected: \(address) (\(type)), handle \(handle.map { String($0) } ?? "?")")
    }

    func disconnected(_ address: BluetoothAddress, reason: String) {
        logger.info("disconnected: \(address), reason \(reason)")
    }

    /// What the ATT server reports: MTU, subscriptions, writes, timeouts (other events at
    /// debug level). Lines start with the central's address (`central` resolves it; the
    /// connection number when it cannot).
    func att(_ event: ATTServerEvent, database db: GATTDatabase, central: (ConnectionID) -> String? = { _ in nil }) {
        func name(_ c: CharacteristicIndex) -> String { db.contains(c) ? db[c].displayName : "#\(c.rawValue)" }
        func who(_ id: ConnectionID) -> String { central(id) ?? id.description }
        switch event {
        case .mtuExchanged(let id, let mtu): logger.info("\(who(id)): MTU \(mtu)")
        case .subscriptionChanged(let id, let c, let n, let i):
            logger.info("\(who(id)): \(n || i ? "subscribed to" : "unsubscribed from") \(name(c))\(i ? " (indications)" : "")")
        case .written(let id, let c, let v): logger.info("\(who(id)): wrote \(v.count) bytes to \(name(c))")
        case .indicationTimedOut(let id, let c): logger.warning("\(who(id)): indication of \(name(c)) not confirmed in 30 s; closing its bearer")
        case .indicationUnconfirmed(let id, let c):
            logger.warning("\(who(id)): indication of \(name(c)) will not be confirmed: its Enhanced ATT bearer closed")
        case .requestTimedOut(let r): logger.warning("request \(r) not answered in time; answered Unlikely Error")
        default: logger.debug("\(event)")
        }
    }

    /// Shutdown begins with `centrals` connected.
    func stopping(centrals: Int) {
        logger.info("stopping: advertising off, disconnecting \(centrals) central(s)")
    }

    /// What a config reload changed.
    func reloaded(_ r: ReloadOutcome) {
        if let (old, new) = r.databaseHashes {
            let sent: String
            switch r.serviceChanged {
            case .queued(let n)?: sent = "Service Changed indicated to \(n) central\(n == 1 ? "" : "s")"
            case let other?: sent = "Service Changed not indicated (\(other))"
            case nil: sent = "Service Changed not indicated"
            }
            logger.info("config reloaded: database changed (hash \(AttributeValueLiteral.hexString(old)) → \(AttributeValueLiteral.hexString(new))); \(sent)")
        } else {
            logger.info("config reloaded: database unchanged")
        }
        if r.advertisingChanged { logger.info("config reloaded: advertising data changed; advertising restarted") }
    }

    /// `n` persisted values were put into the database at start.
    func restored(persistedValues n: Int) {
        logger.info("restored \(n) persisted value\(n == 1 ? "" : "s")")
    }
}
