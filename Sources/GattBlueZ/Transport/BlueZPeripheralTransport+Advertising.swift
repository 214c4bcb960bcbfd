import GattCore
import GattDBus

// Advertising sets as `LEAdvertisement1` objects (`BlueZAdvertisement`), registered with
// `LEAdvertisingManager1`; a set whose payloads changed is registered again under a new path.

extension BlueZPeripheralTransport {
    public func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Never] {
        eventLoop.execute {
            guard case .open(let c) = self.state else { return }
            let wanted = Dictionary(sets.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            for (id, a) in self.advertisements where wanted[id] != a.set { self.unregister(id, c) }
            for set in sets where self.advertisements[set.id] == nil { self.register(set, c) }
        }
        return []
    }

    private func manager(_ member: String, _ path: String) -> DBusCall {
        DBusCall(
            destination: BlueZ.service, path: BlueZAdapter.path(index), interface: "org.bluez.LEAdvertisingManager1", member: member,
            member == "RegisterAdvertisement" ? [.objectPath(path), .properties([:])] : [.objectPath(path)])
    }

    private func register(_ set: AdvertisingSet, _ c: DBusConnection) {
        let path = BlueZAdvertisementState.root + "/set\(nextAdvertisement)"
        nextAdvertisement += 1
        advertisements[set.id] = BlueZAdvertisementState(path: path, set: set)
        c.call(manager("RegisterAdvertisement", path)) { result in
            self.eventLoop.execute {
                guard self.connection === c, self.advertisements[set.id]?.path == path else { return }
                switch result {
                case .success:
                    self.advertisements[set.id]?.registered = true
                    self.emit(.advertisingChanged(true, set: set.id))
                case .failure(let e):
                    self.advertisements[set.id] = nil
                    self.emit(.advertisingRefused(whileConnected: false, reason: "bluetoothd: \(e)", set: set.id))
                }
            }
        }
    }

    private func unregister(_ id: String, _ c: DBusConnection) {
        guard let a = advertisements.removeValue(forKey: id) else { return }
        c.call(manager("UnregisterAdvertisement", a.path)) { _ in }
        if a.registered { emit(.advertisingChanged(false, set: id)) }
    }

    /// Everything gattd registered, unregistered (the transport closes).
    func unregisterAll(_ c: DBusConnection) {
        for id in advertisements.keys.sorted() { unregister(id, c) }
        c.call(applicationCall(register: false)) { _ in }
    }

    /// bluetoothd reading an advertisement's properties, or releasing it.
    func advertisementCall(_ call: DBusIncomingCall, _ c: DBusConnection) {
        guard let (id, a) = advertisements.first(where: { $0.value.path == call.path }) else {
            return c.reply(call, .failure(.unknownObject(call.path)))
        }
        let props = BlueZAdvertisement.properties(a.set)
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            c.reply(call, .success([.properties(call.arguments.first?.string == BlueZAdvertisement.interface ? props : [:])]))
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard call.arguments.count == 2, let v = call.arguments[1].string.flatMap({ props[$0] }) else {
                return c.reply(call, .failure(.unknownProperty(call.path)))
            }
            c.reply(call, .success([.variant(v)]))
        case (BlueZAdvertisement.interface, "Release"):
            c.reply(call, .success([]))
            advertisements[id] = nil
            logger.info("bluetoothd released advertising set \"\(id)\"")
            if a.registered { emit(.advertisingChanged(false, set: id)) }
        default:
            c.reply(call, .failure(.unknownMethod("\(call.interface).\(call.member) on \(call.path)")))
        }
    }
}
