import GattCore
import GattDBus

// Pairing through bluetoothd: gattd registers as its default agent (`BlueZAgent`) with the
// config's IO capability; the agent's questions are the core's pairing prompts, answered
// through `respondToPairing` as on gattd's other transports; which wait, and what each call
// is answered, is `BlueZPairingPrompts`'.

extension BlueZPeripheralTransport {
    /// `RegisterAgent`, then `RequestDefaultAgent`: another default agent (a desktop's) is
    /// said and left alone; bluetoothd then asks it, not gattd.
    func registerAgent(_ c: DBusConnection) {
        let capability = BlueZAgent.capability(security.ioCapability)
        let register = BlueZAgent.managerCall("RegisterAgent", [.objectPath(BlueZAgent.path), .string(capability)])
        let makeDefault = BlueZAgent.managerCall("RequestDefaultAgent", [.objectPath(BlueZAgent.path)])
        c.call(register) { result in
            if case .failure(let e) = result { return self.logger.warning("bluetoothd refused gattd's pairing agent: \(e); pairing prompts go to whichever agent it has") }
            self.call(makeDefault, on: c, done: "gattd is bluetoothd's default pairing agent (\(capability))") {
                "gattd could not become bluetoothd's default pairing agent (\($0)): centrals' pairings go to the default one"
            }
        }
    }

    /// `UnregisterAgent`, then the agent again with the config's IO capability (a reload changed it).
    func reregisterAgent(_ c: DBusConnection) {
        c.call(BlueZAgent.managerCall("UnregisterAgent", [.objectPath(BlueZAgent.path)])) { _ in self.eventLoop.execute { if self.connection === c { self.registerAgent(c) } } }
    }

    func agentCall(_ call: DBusIncomingCall, _ c: DBusConnection) {
        let route = BlueZAgent.route(member: call.member, arguments: call.arguments, confirmPairing: security.confirmPairing)
        let handling = prompts.agentCall(call, route, devices: &devices)
        if let device = handling.foreign { logger.info("bluetoothd asked gattd's agent about \(device), not a central of hci\(index): refused") }
        for (call, reply) in handling.replies { c.reply(call, reply) }
        for e in handling.events { emit(e) }
    }

    public func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Never] {
        guard let (call, reply) = prompts.answer(id, answer), let c = connection else { return [] }
        c.reply(call, reply)
        return []
    }

    /// `gattctl unbond`: bluetoothd forgets the device and its keys (`Adapter1.RemoveDevice`,
    /// which also disconnects it).
    public func removeBond(_ bond: Bond) {
        eventLoop.execute {
            guard let c = self.connection else {
                return self.logger.warning("\(bond.address): bluetoothd is not reachable; its bond there stays (remove it with bluetoothctl remove \(bond.address))")
            }
            let call = BlueZAdapter.removeDeviceCall(self.index, self.devices.path(of: bond.address))
            self.call(call, on: c, done: "\(bond.address): bluetoothd removed the device and its bond") { "\(bond.address): bluetoothd did not remove its bond: \($0)" }
        }
    }
}
