import GattCore
import GattDBus

// bluetoothd's calls on gattd's GATT application: routed by `BlueZGattApplication`, reads
// and writes handed to the core as GATT-level accesses and answered when it answers.

extension BlueZPeripheralTransport {
    func incoming(_ call: DBusIncomingCall, _ c: DBusConnection) {
        guard connection === c else { return c.reply(call, .failure(.unknownObject("gattd is not serving on this connection"))) }
        if call.path.hasPrefix(BlueZAdvertisementState.root) { return advertisementCall(call, c) }
        if call.path == BlueZAgent.path { return call.interface == BlueZAgent.interface ? agentCall(call, c) : c.reply(call, .failure(.unknownMethod(call.description))) }
        switch application.route(path: call.path, interface: call.interface, member: call.member, arguments: call.arguments) {
        case .reply(let values): c.reply(call, .success(values))
        case .fail(let error): c.reply(call, .failure(error))
        case .moved(let path, let asked, let given):
            logger.warning("bluetoothd placed \(path) at handle 0x\(String(given, radix: 16)), not gattd's \(asked): centrals that cached gattd's handles must discover again")
            c.reply(call, .success([]))
        case .attribute(let request): attribute(request, call, c)
        }
    }

    private func attribute(_ request: BlueZAttributeRequest, _ call: DBusIncomingCall, _ c: DBusConnection) {
        switch request {
        case .read(let h, let o):
            access(.read(h, offset: o.offset), device: o.device, call, c, read: true)
        case .write(let h, let value, let o):
            // A Prepare Write asking to be authorized: nothing is written yet, and gattd
            // authorizes every one (the write itself is checked when it comes).
            if o.prepareAuthorize { return c.reply(call, .success([])) }
            access(.write(h, value, offset: o.offset, withResponse: o.type != "command"), device: o.device, call, c, read: false)
        case .startNotify(let h):
            logger.info("\(call.path): centrals subscribed (bluetoothd's StartNotify for handle \(h))")
            emit(.gattSubscribers(h, true))
            c.reply(call, .success([]))
        case .stopNotify(let h):
            logger.info("\(call.path): no central subscribed any more (bluetoothd's StopNotify for handle \(h))")
            emit(.gattSubscribers(h, false))
            c.reply(call, .success([]))
        case .confirm(let h):
            c.reply(call, .success([]))
            confirmed(h)
        }
    }

    /// bluetoothd's `Confirm` names no device (5.66): the confirmation is the central's when
    /// one is connected; with several, which one confirmed is unknown and said only in the log.
    private func confirmed(_ handle: AttributeHandle) {
        let connected = devices.connectedIDs
        guard connected.count == 1, let id = connected.first else {
            return logger.info("one of \(connected.count) centrals confirmed an indication of handle \(handle) (bluetoothd does not say which)")
        }
        emit(.gattConfirmed(id, handle))
    }

    private func access(_ a: GATTAccess, device: String?, _ call: DBusIncomingCall, _ c: DBusConnection, read: Bool) {
        guard let (id, events) = devices.connection(for: device) else {
            return c.reply(call, .failure(BlueZGattError.dbusError(.unlikelyError)))
        }
        for e in events { emit(e) }
        let access = GATTAccessID(nextAccess)
        nextAccess += 1
        waiting[access] = (call, read)
        emit(.gattAccess(id, access, a))
    }

    public func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Never] {
        guard let w = waiting.removeValue(forKey: id), let c = connection else { return [] }
        switch result {
        case .success(let value): c.reply(w.call, .success(w.read ? [.bytes(value)] : []))
        case .failure(let error): c.reply(w.call, .failure(BlueZGattError.dbusError(error)))
        }
        return []
    }

    /// A new value for the characteristic's subscribers: its `Value` changes, and bluetoothd
    /// notifies or indicates every subscribed central as each asked.
    public func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Never] {
        guard let c = connection, let path = application.characteristicPath(valueHandle: handle) else { return [] }
        c.emit(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            [.string(BlueZGattApplication.characteristicInterface), .properties(["Value": .bytes(value)]), .strings([])])
        return []
    }

    public func serveDatabase(_ database: GATTDatabase) {
        eventLoop.execute {
            self.database = database
            self.application = BlueZGattApplication(database: database, handleOffset: self.application.handleOffset)
            // Registered already: bluetoothd takes the new tree when it is registered again.
            guard case .open(let c) = self.state else { return }
            self.reregisterApplication(c)
        }
    }

    /// `UnregisterApplication` then `RegisterApplication`: bluetoothd drops the old services
    /// and adds the new ones (Service Changed goes to the centrals).
    private func reregisterApplication(_ c: DBusConnection) {
        let register = applicationCall(register: true)
        c.call(applicationCall(register: false)) { _ in
            c.call(register) { result in
                switch result {
                case .success: self.logger.info("GATT application registered again with bluetoothd (the database changed)")
                case .failure(let e): self.logger.warning("bluetoothd refused the changed GATT application: \(e)")
                }
            }
        }
    }
}
