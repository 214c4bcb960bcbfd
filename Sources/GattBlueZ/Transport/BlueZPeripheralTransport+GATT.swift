import GattCore
import GattDBus

// bluetoothd's calls on gattd's GATT application: routed by `BlueZGattApplication`; what the
// core hears of each, and the reads and writes waiting for its answer, are `BlueZGATTAccesses`'.

extension BlueZPeripheralTransport {
    func incoming(_ call: DBusIncomingCall, _ c: DBusConnection) {
        guard connection === c else { return c.reply(call, .failure(.unknownObject("gattd is not serving on this connection"))) }
        if call.path.hasPrefix(BlueZAdvertisements.root) { return advertisementCall(call, c) }
        if call.path == BlueZAgent.path { return call.interface == BlueZAgent.interface ? agentCall(call, c) : c.reply(call, .failure(.unknownMethod(call.description))) }
        switch application.route(path: call.path, interface: call.interface, member: call.member, arguments: call.arguments) {
        case .reply(let values): c.reply(call, .success(values))
        case .fail(let error): c.reply(call, .failure(error))
        case .moved(let path, let asked, let given):
            logger.warning("bluetoothd placed \(path) at handle 0x\(String(given, radix: 16)), not gattd's \(asked): centrals that cached gattd's handles must discover again")
            c.reply(call, .success([]))
        case .attribute(let request):
            let handling = accesses.request(request, call, devices: &devices)
            switch request {
            case .startNotify(let h): logger.info("\(call.path): centrals subscribed (bluetoothd's StartNotify for handle \(h))")
            case .stopNotify(let h): logger.info("\(call.path): no central subscribed any more (bluetoothd's StopNotify for handle \(h))")
            case .confirm(let h) where handling.events.isEmpty:
                logger.info("one of \(devices.connectedCount) centrals confirmed an indication of handle \(h) (bluetoothd does not say which)")
            default: break
            }
            // The core hears of a subscription before bluetoothd has its answer; of a
            // confirmation after.
            let replyFirst = if case .confirm = request { true } else { false }
            if replyFirst, let reply = handling.reply { c.reply(call, reply) }
            for e in handling.events { emit(e) }
            if !replyFirst, let reply = handling.reply { c.reply(call, reply) }
        }
    }

    public func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Never] {
        guard let (call, reply) = accesses.answer(id, result), let c = connection else { return [] }
        c.reply(call, reply)
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
            guard let (c, _) = self.life.served else { return }
            self.reregisterApplication(c)
        }
    }

    /// `UnregisterApplication` then `RegisterApplication`: bluetoothd drops the old services
    /// and adds the new ones (Service Changed goes to the centrals).
    private func reregisterApplication(_ c: DBusConnection) {
        let register = BlueZGattApplication.managerCall(register: true, adapter: index)
        c.call(BlueZGattApplication.managerCall(register: false, adapter: index)) { _ in
            self.call(register, on: c, done: "GATT application registered again with bluetoothd (the database changed)") { "bluetoothd refused the changed GATT application: \($0)" }
        }
    }
}
