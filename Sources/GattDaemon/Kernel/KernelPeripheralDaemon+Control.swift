import GattCore
import GattTransport
import NIOCore

// The kernel-transport daemon as seen by the control socket and SIGHUP: the same
// `PeripheralControl` and `reload` as the H4 `PeripheralDaemon`.

extension KernelPeripheralDaemon: PeripheralControl {
    public var database: GATTDatabase { server.database }

    public func connection(of central: BluetoothAddress) -> ConnectionID? {
        links.sorted { $0.key.rawValue < $1.key.rawValue }.first { $0.value.bearer.peer.address == central }?.key
    }

    public func notify(characteristic: Int, value: [UInt8], only: ConnectionID?) -> NotifyResult {
        let (result, outputs) = server.notify(characteristic: characteristic, value: value, only: only, now: now)
        process(outputs)
        if case .queued = result { persisted?.record(database, characteristic: characteristic, value: value) }
        return result
    }

    public func setValue(characteristic: Int, value: [UInt8]) -> Bool {
        guard server.setValue(characteristic: characteristic, value: value) else { return false }
        persisted?.record(database, characteristic: characteristic, value: value)
        return true
    }

    public func status() -> ControlStatus {
        ControlStatus(
            advertising: isAdvertising, address: address,
            connections: links.sorted { $0.key.rawValue < $1.key.rawValue }.map { id, link in
                ControlStatus.Central(
                    address: link.bearer.peer.address, addressType: link.bearer.peer.type.hciAddressType, security: link.security,
                    id: id, att: server)
            })
    }

    public func setAdvertising(_ enabled: Bool) {
        advertisingWanted = enabled
        updateAdvertising()
    }

    /// HCI Disconnect (Remote User Terminated) on the central's link; the bearer's
    /// ECONNRESET then cleans up as for any disconnection.
    public func disconnect(_ connection: ConnectionID) {
        guard let link = links[connection] else { return }
        guard let handle = link.handle, let controller else {
            link.bearer.close()
            return
        }
        let logger = self.logger
        runCommand {
            do {
                try controller.send(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection))
            } catch {
                logger.warning("cannot disconnect \(link.bearer.peer.address): \(error)")
            }
        }
    }

    public func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool {
        do {
            process(try server.respond(to: request, result: result, now: now))
            return true
        } catch {
            return false
        }
    }

    public func setControlClientAttached(_ attached: Bool) {
        controlAttached = attached
        server.controlClientAttached = attached
        if !attached { process(server.failPendingRequests(now: now)) }
    }

    // MARK: - Reload (SIGHUP)

    /// Switches to a new, already validated config without dropping connections, as
    /// `PeripheralDaemon.reload` does: a different Database Hash rebuilds the ATT server's
    /// database and indicates Service Changed; new advertising payloads restart advertising.
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
                self.process(self.server.replaceDatabase(db, now: self.now))
                let (r, outputs) = self.server.notify(characteristic: 2, value: [0x01, 0x00, 0xFF, 0xFF], now: self.now)
                self.process(outputs)
                self.logger.info("config reloaded: database changed; Service Changed: \(r)")
            } else {
                for i in 0..<2 where old.value(ofCharacteristic: i) != db.value(ofCharacteristic: i) {
                    _ = self.server.setValue(characteristic: i, value: db.value(ofCharacteristic: i))
                }
                self.logger.info("config reloaded: database unchanged")
            }
            if newPayloads != self.payloads {
                self.payloads = newPayloads
                self.advertisingChanged()
                self.logger.info("config reloaded: advertising data changed; advertising restarted")
            }
            try? self.options.notifier.ready(status: self.statusLine())
        }
    }
}
