import GattCore
import GattDBus

// Pairing through bluetoothd: gattd registers as its default agent (`BlueZAgent`) with the
// config's IO capability; the agent's questions are the core's pairing prompts, answered
// through `respondToPairing` as on gattd's other transports.

extension BlueZPeripheralTransport {
    /// `RegisterAgent`, then `RequestDefaultAgent`: another default agent (a desktop's) is
    /// said and left alone; bluetoothd then asks it, not gattd.
    func registerAgent(_ c: DBusConnection) {
        let capability = BlueZAgent.capability(security.ioCapability)
        let register = agentManagerCall("RegisterAgent", [.objectPath(BlueZAgent.path), .string(capability)])
        let makeDefault = agentManagerCall("RequestDefaultAgent", [.objectPath(BlueZAgent.path)])
        c.call(register) { result in
            if case .failure(let e) = result { return self.logger.warning("bluetoothd refused gattd's pairing agent: \(e); pairing prompts go to whichever agent it has") }
            c.call(makeDefault) { result in
                switch result {
                case .success: self.logger.info("gattd is bluetoothd's default pairing agent (\(capability))")
                case .failure(let e): self.logger.warning("gattd could not become bluetoothd's default pairing agent (\(e)): centrals' pairings go to the default one")
                }
            }
        }
    }

    /// `UnregisterAgent`, then the agent again with the config's IO capability (a reload changed it).
    func reregisterAgent(_ c: DBusConnection) {
        c.call(agentManagerCall("UnregisterAgent", [.objectPath(BlueZAgent.path)])) { _ in self.eventLoop.execute { if self.connection === c { self.registerAgent(c) } } }
    }

    /// A call on bluetoothd's `AgentManager1`.
    private func agentManagerCall(_ member: String, _ arguments: [DBusValue]) -> DBusCall {
        DBusCall(destination: BlueZ.service, path: "/org/bluez", interface: "org.bluez.AgentManager1", member: member, arguments)
    }

    func agentCall(_ call: DBusIncomingCall, _ c: DBusConnection) {
        switch BlueZAgent.route(member: call.member, arguments: call.arguments, confirmPairing: security.confirmPairing) {
        case .prompt(let device, let event):
            guard let (id, events) = devices.connection(for: device) else {
                logger.info("bluetoothd asked gattd's agent about \(device), not a central of hci\(index): refused")
                return c.reply(call, .failure(BlueZAgent.rejected))
            }
            for e in events { emit(e) }
            devices.asked(device, event)
            if let earlier = pairingPrompts.removeValue(forKey: id) { c.reply(earlier.call, .failure(BlueZAgent.rejected)) }
            pairingPrompts[id] = (call, event)
            emit(.pairing(id, event))
        case .show(let device, let event):
            c.reply(call, .success([]))
            guard let (id, events) = devices.connection(for: device) else { return }
            for e in events { emit(e) }
            devices.asked(device, event)
            emit(.pairing(id, event))
        case .acknowledge:
            c.reply(call, .success([]))
        case .justWorks(let device):
            // Another adapter's pairing (a keyboard's) is not gattd's to accept.
            guard devices.owns(device) else {
                logger.info("bluetoothd asked gattd's agent about \(device), not a central of hci\(index): refused")
                return c.reply(call, .failure(BlueZAgent.rejected))
            }
            c.reply(call, .success([]))
        case .cancel:
            c.reply(call, .success([]))
            for id in pairingPrompts.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                guard let p = pairingPrompts.removeValue(forKey: id) else { continue }
                c.reply(p.call, .failure(BlueZAgent.rejected))
                emit(.pairing(id, .pairingFailed(.unspecifiedReason, remote: true)))
            }
        case .refuse(let error):
            c.reply(call, .failure(error))
        }
    }

    public func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Never] {
        guard let p = pairingPrompts.removeValue(forKey: id), let c = connection else { return [] }
        c.reply(p.call, BlueZAgent.reply(answer, to: p.event))
        return []
    }

    /// `gattctl unbond`: bluetoothd forgets the device and its keys (`Adapter1.RemoveDevice`,
    /// which also disconnects it).
    public func removeBond(_ bond: Bond) {
        eventLoop.execute {
            guard let c = self.connection else {
                return self.logger.warning("\(bond.address): bluetoothd is not reachable; its bond there stays (remove it with bluetoothctl remove \(bond.address))")
            }
            let path = self.devices.path(of: bond.address)
            let call = DBusCall(destination: BlueZ.service, path: BlueZAdapter.path(self.index), interface: "org.bluez.Adapter1", member: "RemoveDevice", [.objectPath(path)])
            c.call(call) { result in
                switch result {
                case .success: self.logger.info("\(bond.address): bluetoothd removed the device and its bond")
                case .failure(let e): self.logger.warning("\(bond.address): bluetoothd did not remove its bond: \(e)")
                }
            }
        }
    }

    /// A central went: its unanswered prompt is refused.
    func promptsEnded(_ events: [TransportEvent]) {
        for case .disconnected(let id, _, _) in events {
            if let p = pairingPrompts.removeValue(forKey: id) { connection?.reply(p.call, .failure(BlueZAgent.rejected)) }
        }
    }
}
