import GattCore
import NIOCore

// What the control socket drives (`PeripheralControl`): values, notifications, status,
// advertising, forwarded requests, and who is watching.
extension PeripheralDaemon {
    public var database: GATTDatabase { core.database }

    public func connection(of central: BluetoothAddress) -> ConnectionID? { core.connection(of: central) }

    public func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID?) -> NotifyResult {
        let (result, outputs) = core.notify(characteristic: characteristic, value: value, only: only, now: now)
        process(outputs)
        return result
    }

    public func notify(values: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID?) -> NotifyResult {
        let (result, outputs) = core.notify(values: values, only: only, now: now)
        process(outputs)
        return result
    }

    public func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool {
        core.setValue(characteristic: characteristic, value: value)
    }

    public func status() -> ControlStatus {
        var status = ControlStatus(
            advertising: core.isAdvertising, address: core.address ?? known.lastAddress,
            connections: core.connections.values.sorted { $0.id.rawValue < $1.id.rawValue }.map { c in
                var central = ControlStatus.Central(address: c.address, addressType: c.addressType, security: c.security, id: c.id, att: core.att)
                central.identity = bonds.resolving(c.address)?.address
                central.link = c.link
                return central
            },
            advertisingData: core.payloads.advertisingData,
            scanResponse: core.payloads.parameters.advertisingType.isScannable || !core.payloads.scanResponseData.isEmpty
                ? core.payloads.scanResponseData : nil)
        status.state = known.state.state
        status.controller = known.info.map(ControlStatus.Controller.init)
        status.controller?.summary = known.summary
        // Connectable sets advertise from the controller's address; the others too where the
        // controller says so (not known until one was ready).
        let address = core.address
        let nonConnectableShowAddress = known.info?.nonConnectableSetsUseControllerAddress ?? false
        status.sets = core.allSets.map {
            ControlStatus.AdvertisingSetStatus(
                id: $0.id, advertising: core.isOnAir($0.id), payloads: $0.payloads,
                address: $0.payloads.isConnectable || nonConnectableShowAddress ? address : nil)
        }
        return status
    }

    public func setAdvertising(_ enabled: Bool, set: String?) {
        advertising.setWanted(enabled, set: set)
        keepAdvertisingChoice(enabled, set: set)
    }

    public var advertisingSetIDs: [String] { core.allSets.map(\.id) }

    public func disconnect(_ connection: ConnectionID) { process(core.disconnect(connection)) }

    public func respond(to request: PendingRequestID, result: Result<[UInt8], ATTError>) -> Bool { context.respond(to: request, result: result) }

    public func setControlClientAttached(_ attached: Bool) {
        if attached != core.att.deferredAccessAvailable {
            logger.info(attached ? "a responder answers control characteristics now" : "no responder: control characteristics read their stored value, writes are rejected")
        }
        process(core.setDeferredAccessAvailable(attached, now: now))
    }

    public func setControlWatched(_ watched: Bool) {
        pairing.watched = watched
    }
}
