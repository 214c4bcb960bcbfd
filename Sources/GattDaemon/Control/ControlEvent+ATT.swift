import GattControlProtocol
import GattCore

extension ControlEvent {
    /// The control event for an ATT server event, or nil when it is not forwarded
    /// (descriptor writes, client features, request timeouts, commits: the daemon answers
    /// those itself). An indication that will not be confirmed, its bearer closed or timed
    /// out (fixed or Enhanced), is `unconfirmed` with reason `bearer_closed` or `timeout`.
    /// `central` maps a connection to its address string.
    public static func from(_ e: ATTServerEvent, database db: GATTDatabase, central: (ConnectionID) -> String?) -> ControlEvent? {
        func name(_ c: CharacteristicIndex) -> String { db.contains(c) ? db[c].displayName : "#\(c.rawValue)" }
        switch e {
        case .mtuExchanged(let id, let mtu):
            return central(id).map { .mtu(central: $0, mtu: mtu) }
        case .subscriptionChanged(let id, let c, let n, let i):
            return central(id).map { .subscription(central: $0, characteristic: name(c), notify: n, indicate: i) }
        case .written(let id, let c, let v), .writeCommand(let id, let c, let v):
            return central(id).map { .written(central: $0, characteristic: name(c), value: ControlValue(hex: v)) }
        case .deferredAccess(let r, let id, .read(let c, let offset)):
            return central(id).map { .readRequest(central: $0, request: r.rawValue, characteristic: name(c), offset: offset) }
        case .deferredAccess(let r, let id, .write(let c, let v, let offset)):
            return central(id).map { .writeRequest(central: $0, request: r.rawValue, characteristic: name(c), offset: offset, value: ControlValue(hex: v)) }
        case .indicationConfirmed(let id, let c):
            return central(id).map { .confirmed(central: $0, characteristic: name(c)) }
        case .indicationUnconfirmed(let id, let c):
            return central(id).map { .unconfirmed(central: $0, characteristic: name(c), reason: "bearer_closed") }
        case .indicationTimedOut(let id, let c):
            return central(id).map { .unconfirmed(central: $0, characteristic: name(c), reason: "timeout") }
        case .ready:
            return .ready
        case .descriptorWritten, .clientFeaturesChanged, .requestTimedOut, .deferredAccess(_, _, .commit):
            return nil
        }
    }
}
