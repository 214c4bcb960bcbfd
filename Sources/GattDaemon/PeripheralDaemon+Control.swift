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

    public func status() -> ControlStatus { controller.status { self.bonds.resolving($0)?.address } }

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
