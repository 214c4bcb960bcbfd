import GattControlProtocol
import GattCore
import NIOCore

/// A request's reply: known now, or once persisted values are durable.
public enum ControlOutcome {
    case now(ControlReply)
    /// A failed future is answered `persist_failed`.
    case later(EventLoopFuture<ControlReply>)
}

/// Executes one decoded request against the peripheral (everything but `watch`). What a
/// value may be (length, notify/indicate) is the core's to say: its answer is mapped here.
public enum ControlDispatcher {
    public static func execute(_ command: ControlCommand, on p: any PeripheralControl) -> ControlOutcome {
        do {
            return try run(command, on: p)
        } catch {
            return .now(.failure(error))
        }
    }

    private static func run(_ command: ControlCommand, on p: any PeripheralControl) throws(ControlError) -> ControlOutcome {
        switch command {
        case .notify(let name, let value, let central, _):
            let (index, c) = try characteristic(name, in: p.database)
            let only = try central.map { a throws(ControlError) in try connection(a, p) }
            // A persisted value is made durable first (if the core would take it), then set and sent.
            if c.valueSource == .persisted, let refusal = p.database.valueUpdateRefusal(characteristic: index, value: value.bytes, notifying: true) {
                throw error(refusal, name, value, c)
            }
            // (Only a persisted characteristic builds a write: no allocation on the plain path.)
            if c.valueSource == .persisted, let durable = p.persist([PersistedValue(characteristic: index, value: value.bytes)], central: nil) {
                return .later(durable.assumeIsolated().map { outcome in
                    // Overtaken by a newer value (a central's Write Command): neither set nor sent.
                    guard outcome == .newest else { return .sent(0) }
                    let result = p.notify(characteristic: index, value: value.bytes, only: only)
                    if result == .busy {
                        _ = p.setValue(characteristic: index, value: value.bytes)  // memory matches the disk
                        return .failure(ControlError(.busy, "the value was saved and set, but a subscriber's transmit queue is full and it was not sent; wait for the \"ready\" event"))
                    }
                    return reply(result, name, value, c)
                }.nonisolated())
            }
            return .now(reply(p.notify(characteristic: index, value: value.bytes, only: only), name, value, c))
        case .notifyValues(let values, let central, _):
            return try notify(values, central: central, on: p)
        case .set(let name, let value):
            let (index, c) = try characteristic(name, in: p.database)
            if c.valueSource == .persisted, let refusal = p.database.valueUpdateRefusal(characteristic: index, value: value.bytes, notifying: false) {
                throw error(refusal, name, value, c)
            }
            func set() -> ControlReply {
                guard !p.setValue(characteristic: index, value: value.bytes) else { return .success }
                // Refused by the core: its reason.
                let refusal = p.database.valueUpdateRefusal(characteristic: index, value: value.bytes, notifying: false) ?? .unknownCharacteristic
                return .failure(error(refusal, name, value, c))
            }
            if let durable = p.persist([PersistedValue(characteristic: index, value: value.bytes)], central: nil) {
                return .later(durable.assumeIsolated().map { $0 == .newest ? set() : .success }.nonisolated())
            }
            return .now(set())
        case .get(let name):
            let (index, _) = try characteristic(name, in: p.database)
            return .now(.value(ControlValue(hex: p.database.value(ofCharacteristic: index))))
        case .status:
            return .now(.status(p.status()))
        case .watch, .signal:
            // The control server's own (watching clients, broadcasting a signal).
            return .now(.success)
        case .respond(let request, let result):
            guard p.respond(to: PendingRequestID(request), result: result.map(\.bytes)) else {
                throw ControlError(.unknownRequest, "no pending request \(request) (already answered, timed out, or its central left)")
            }
            return .now(.success)
        case .advertise(let enable, let set):
            try checkSet(set, p)
            p.setAdvertising(enable, set: set)
            return .now(.success)
        case .advertisingData(let set, let update):
            try checkSet(set, p)
            guard let refusal = p.setAdvertisingData(update, set: set) else { return .now(.success) }
            throw ControlError(refusal.isTooLong ? .valueTooLong : .invalidValue, "\(refusal)")
        case .disconnect(let central):
            p.disconnect(try connection(central, p))
            return .now(.success)
        case .pairingRespond, .bonds, .unbond:
            return .now(try pairing(command, on: p))
        case .addService, .removeService, .listServices:
            guard let services = p as? any RuntimeServiceControl else {
                throw ControlError(.unknownOp, "\(command.op) is not supported here")
            }
            return .now(services.runServiceCommand(command))
        case .capture(let file):
            return .now(p.capture(file: file))
        case .publishL2CAPChannel(let json):
            return .now(try l2cap(p).publishL2CAPChannel(json))
        case .unpublishL2CAPChannel(let id):
            return .now(try l2cap(p).unpublishL2CAPChannel(id))
        case .listL2CAPChannels:
            return .now(.l2capChannels(try l2cap(p).l2capChannelList))
        case .connectionParameters(let central, let parameters):
            guard let links = p as? any LinkControl else { throw ControlError(.unknownOp, "connection_parameters is not supported here") }
            let ids = try central.map { a throws(ControlError) in [try connection(a, p)] }
            return links.requestLink(.connectionParameters(parameters.parameters.connectionParameters), on: ids)
        case .phy(let central, let tx, let rx, let coding):
            guard let links = p as? any LinkControl else { throw ControlError(.unknownOp, "phy is not supported here") }
            return links.requestLink(.phy(tx: tx, rx: rx, coding: coding), on: [try connection(central, p)])
        case .dataLength(let central, let octets):
            guard let links = p as? any LinkControl else { throw ControlError(.unknownOp, "data_length is not supported here") }
            return links.requestLink(.dataLength(txOctets: UInt16(octets)), on: [try connection(central, p)])
        case .l2capListen, .l2capUnlisten:
            // Per client: `ControlServer` keeps who listens.
            throw ControlError(.unknownOp, "\(command.op) is handled by the control server")
        }
    }

    private static func l2cap(_ p: any PeripheralControl) throws(ControlError) -> any L2CAPChannelControl {
        guard let c = p as? any L2CAPChannelControl else { throw ControlError(.unknownOp, "L2CAP channels are not supported here") }
        return c
    }

    /// The reply to the core's answer to a notify.
    /// `notify` with `values`: every value checked first (the error names the first refused),
    /// persisted ones made durable together, then all set and sent at once. `sent`: the
    /// centrals reached.
    private static func notify(_ values: [ControlNotifyValue], central: String?, on p: any PeripheralControl) throws(ControlError) -> ControlOutcome {
        var updates: [(characteristic: CharacteristicIndex, value: [UInt8])] = []
        var persisted: [PersistedValue] = []
        for v in values {
            let (index, c) = try characteristic(v.characteristic, in: p.database)
            if let refusal = p.database.valueUpdateRefusal(characteristic: index, value: v.value.bytes, notifying: true) {
                throw error(refusal, v.characteristic, v.value, c)
            }
            if updates.contains(where: { $0.characteristic == index }) {
                throw ControlError(.invalidValue, "\(c.displayName) is named twice in \"values\"")
            }
            updates.append((index, v.value.bytes))
            if c.valueSource == .persisted { persisted.append(PersistedValue(characteristic: index, value: v.value.bytes)) }
        }
        let only = try central.map { a throws(ControlError) in try connection(a, p) }
        func send(_ updates: [(characteristic: CharacteristicIndex, value: [UInt8])]) -> ControlReply {
            guard !updates.isEmpty else { return .sent(0) }
            switch p.notify(values: updates, only: only) {
            case .queued(let n): return .sent(n)
            case .busy: return .failure(ControlError(.busy, "a subscriber's transmit queue is full; nothing was changed; wait for the \"ready\" event"))
            case let refusal: return .failure(ControlError(.invalidValue, "refused: \(refusal)"))
            }
        }
        if !persisted.isEmpty, let durable = p.persist(persisted, central: nil) {
            return .later(durable.assumeIsolated().map { outcome in
                // A value overtaken by a newer one (a central's Write Command) is neither set
                // nor sent, as for one value; the others are.
                var newest = updates
                if case .overtaken(let skipped) = outcome { newest.removeAll { skipped.contains($0.characteristic) } }
                let r = send(newest)
                if case .failure(let e) = r, e.code == .busy {
                    for u in newest { _ = p.setValue(characteristic: u.characteristic, value: u.value) }  // memory matches the disk
                    return .failure(ControlError(.busy, "the values were saved and set, but a subscriber's transmit queue is full and they were not sent; wait for the \"ready\" event"))
                }
                return r
            }.nonisolated())
        }
        return .now(send(updates))
    }

    private static func reply(_ result: NotifyResult, _ name: String, _ value: ControlValue, _ c: Characteristic) -> ControlReply {
        switch result {
        case .queued(let n): .sent(n)
        case .busy: .failure(ControlError(.busy, "a subscriber's transmit queue is full; nothing was changed; wait for the \"ready\" event"))
        case .valueTooLong, .notNotifiable, .unknownCharacteristic: .failure(error(result, name, value, c))
        }
    }

    /// The error for a value the core refuses.
    private static func error(_ refusal: NotifyResult, _ name: String, _ value: ControlValue, _ c: Characteristic) -> ControlError {
        switch refusal {
        case .valueTooLong:
            ControlError(.valueTooLong, "\(value.bytes.count) bytes is longer than the maximum length of \(c.displayName) (\(c.maxLength) bytes)")
        case .notNotifiable:
            ControlError(.notNotifiable, "\(c.displayName) has neither notify nor indicate")
        case .unknownCharacteristic, .queued, .busy:
            ControlError(.unknownCharacteristic, "no characteristic \"\(name)\"")
        }
    }

    private static func characteristic(_ name: String, in db: GATTDatabase) throws(ControlError) -> (CharacteristicIndex, Characteristic) {
        guard let i = db.characteristicIndex(named: name), db.contains(i) else {
            throw ControlError(.unknownCharacteristic, "no characteristic \"\(name)\" (use its config id, or its UUID when unique)")
        }
        return (i, db[i])
    }

    /// An `advertise` or `advertising_data` set that does not exist.
    private static func checkSet(_ set: String?, _ p: any PeripheralControl) throws(ControlError) {
        guard let set, !p.advertisingSetIDs.contains(set) else { return }
        throw ControlError(.invalidValue, "\(AdvertisingDataUpdateError.unknownSet(set, sets: p.advertisingSetIDs))")
    }

    private static func connection(_ central: String, _ p: any PeripheralControl) throws(ControlError) -> ConnectionID {
        guard let a = BluetoothAddress(central) else {
            throw ControlError(.unknownCentral, "\"\(central)\" is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
        }
        guard let id = p.connection(of: a) else { throw ControlError(.unknownCentral, "no central \(a) is connected") }
        return id
    }
}
