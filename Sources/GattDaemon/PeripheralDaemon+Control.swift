import GattCore
import Logging
import NIOCore

// The H4 daemon as seen by the control socket, persistence, systemd and SIGHUP.

extension PeripheralDaemon: PeripheralControl {
    public var database: GATTDatabase { host.att.database }

    public func connection(of central: BluetoothAddress) -> ConnectionID? {
        host.connections.values.sorted { $0.handle < $1.handle }.first { $0.peerAddress == central }?.id
    }

    public func notify(characteristic: Int, value: [UInt8], only: ConnectionID?) -> NotifyResult {
        let (result, outputs) = host.notify(characteristic: characteristic, value: value, only: only, now: now)
        process(outputs)
        if case .queued = result { persisted?.record(database, characteristic: characteristic, value: value) }
        return result
    }

    public func setValue(characteristic: Int, value: [UInt8]) -> Bool {
        guard host.setValue(characteristic: characteristic, value: value) else { return false }
        persisted?.record(database, characteristic: characteristic, value: value)
        return true
    }

    public func status() -> ControlStatus {
        ControlStatus(
            advertising: host.isAdvertising, address: host.controller.address,
            connections: host.connections.values.sorted { $0.handle < $1.handle }.map { c in
                ControlStatus.Central(address: c.peerAddress, addressType: c.peerAddressType, security: c.security, id: c.id, att: host.att)
            })
    }

    public func setAdvertising(_ enabled: Bool) {
        advertisingWanted = enabled
        process(host.setAdvertising(enabled, now: now))
    }

    public func disconnect(_ connection: ConnectionID) {
        process(host.disconnect(connection.rawValue, now: now))
    }

    public func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool {
        do {
            process(try host.respond(to: request, result: result, now: now))
            return true
        } catch {
            return false
        }
    }

    public func setControlClientAttached(_ attached: Bool) {
        controlAttached = attached
        host.setControlClientAttached(attached)
        if !attached { process(host.failPendingRequests(now: now)) }
    }

    // MARK: - Events → control clients, persistence, systemd

    /// Called for every host event after logging.
    func observe(_ e: HostEvent) {
        switch e {
        case .advertisingChanged(true):
            if !readyNotified {
                readyNotified = true
                try? options.notifier.ready(status: statusLine())
            }
        case .connected(let c):
            try? options.notifier.status(statusLine())
            controlEventHandler?(.connected(central: c.peerAddress.description))
        case .disconnected(let c, let reason):
            try? options.notifier.status(statusLine())
            controlEventHandler?(.disconnected(central: c.peerAddress.description, reason: reason.controlName))
        case .att(let a):
            if case .written(_, let c, let v) = a { persisted?.record(database, characteristic: c, value: v) }
            let db = database
            let connections = host.connections
            if let handler = controlEventHandler,
                let event = ControlEvent.from(a, database: db, central: { connections[$0.rawValue]?.peerAddress.description })
            {
                handler(event)
            }
        default:
            break
        }
    }

    /// The systemd STATUS= text.
    func statusLine() -> String {
        let n = host.connections.count
        let name = configuration.advertising.localName ?? configuration.name
        return "\"\(name)\": \(n) central\(n == 1 ? "" : "s") connected"
    }

    // MARK: - Reload (SIGHUP)

    /// Switches to a new, already validated config without dropping connections.
    /// A different Database Hash rebuilds the ATT server with the new database
    /// (values of characteristics with the same id carry over) and indicates
    /// Service Changed (0x0001–0xFFFF) to subscribed centrals; new advertising
    /// data or parameters restart advertising with them.
    public func reload(configuration new: GattConfiguration, payloads newPayloads: AdvertisingPayloads) -> EventLoopFuture<Void> {
        eventLoop.submit {
            try? self.options.notifier.reloading()
            let old = self.database
            var db = new.makeDatabase()
            self.persisted?.apply(to: &db)
            let oldHash = old.attribute(at: old.databaseHashHandle)?.value ?? []
            let newHash = db.attribute(at: db.databaseHashHandle)?.value ?? []
            self.configuration = new
            if oldHash != newHash {
                self.process(self.host.replaceDatabase(db, now: self.now))
                let (r, outputs) = self.host.notify(characteristic: 2, value: [0x01, 0x00, 0xFF, 0xFF], now: self.now)
                self.process(outputs)
                let sent: String
                switch r {
                case .queued(let n): sent = "Service Changed indicated to \(n) central\(n == 1 ? "" : "s")"
                default: sent = "Service Changed not indicated (\(r))"
                }
                self.logger.info("config reloaded: database changed (hash \(AttributeValueLiteral.hexString(oldHash)) → \(AttributeValueLiteral.hexString(newHash))); \(sent)")
            } else {
                // Device Name and Appearance values are not part of the hash.
                for i in 0..<2 where old.value(ofCharacteristic: i) != db.value(ofCharacteristic: i) {
                    _ = self.host.setValue(characteristic: i, value: db.value(ofCharacteristic: i))
                }
                self.logger.info("config reloaded: database unchanged")
            }
            if newPayloads != self.payloads {
                self.payloads = newPayloads
                var hc = HostConfiguration(deviceName: new.name, advertising: new.advertising)
                hc.randomAddress = self.host.configuration.randomAddress
                self.process(self.host.updateAdvertising(hc, payloads: newPayloads, now: self.now))
                self.logger.info("config reloaded: advertising data changed; advertising restarted")
            }
            try? self.options.notifier.ready(status: self.statusLine())
        }
    }
}
