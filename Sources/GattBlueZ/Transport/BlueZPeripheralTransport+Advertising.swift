import GattCore
import GattDBus

// Advertising sets as `LEAdvertisement1` objects registered with `LEAdvertisingManager1`:
// which calls to make, and what bluetoothd's calls are answered, is `BlueZAdvertisements`'.

extension BlueZPeripheralTransport {
    public func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Never] {
        eventLoop.execute {
            guard let (c, _) = self.life.served else { return }
            self.run(self.advertisements.want(sets), c)
        }
        return []
    }

    /// Makes the advertising manager's calls, then tells the core; a registration's answer
    /// goes back to `advertisements`.
    private func run(_ step: (operations: [BlueZAdvertisements.Operation], events: [TransportEvent]), _ c: DBusConnection) {
        for op in step.operations {
            c.call(op.call(adapter: index)) { result in
                guard case .register(let path) = op else { return }
                self.eventLoop.execute {
                    guard self.life.isCurrent(c) else { return }
                    let refused: DBusError? = if case .failure(let e) = result { e } else { nil }
                    for e in self.advertisements.registered(path, refused: refused) { self.emit(e) }
                }
            }
        }
        for e in step.events { emit(e) }
    }

    /// Everything gattd registered, unregistered (the transport closes).
    func unregisterAll(_ c: DBusConnection) {
        run(advertisements.unregisterAll(), c)
        c.call(BlueZGattApplication.managerCall(register: false, adapter: index)) { _ in }
    }

    /// bluetoothd reading an advertisement's properties, or releasing it.
    func advertisementCall(_ call: DBusIncomingCall, _ c: DBusConnection) {
        switch advertisements.route(path: call.path, interface: call.interface, member: call.member, arguments: call.arguments) {
        case .reply(let result):
            c.reply(call, result)
        case .released(let id, let events):
            c.reply(call, .success([]))
            logger.info("bluetoothd released advertising set \"\(id)\"")
            for e in events { emit(e) }
        }
    }
}
