import GattCore
import GattTransport

/// A `PeripheralTransport` as the half below the seam of the daemon's `PeripheralStack`:
/// calls go straight to the transport, which performs them itself and reports what follows
/// through `onEvent` (the daemon hands those events to the stack, `handle`). It keeps its
/// own timers, so the stack's deadline is the core's.
struct TransportBelow: BelowSeam {
    let transport: any PeripheralTransport

    static func route(_ output: Never) -> BelowSeamRoute {}

    func send(_ pdu: [UInt8], on bearer: BearerID) { transport.send(pdu, on: bearer) }
    func closeEnhancedBearer(_ id: BearerID, now: Duration) -> [Never] {
        transport.closeEnhancedBearer(id)
        return []
    }
    func flush(now: Duration) -> [Never] {
        transport.flush()
        return []
    }
    func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [Never] {
        transport.setAdvertising(sets)
        return []
    }
    func disconnect(_ id: ConnectionID, reason: HCIStatus, now: Duration) -> [Never] {
        transport.disconnect(id, reason: reason)
        return []
    }
    func requestSecurity(_ id: ConnectionID, level: SecurityLevel, reason: ATTError, now: Duration) -> [Never] {
        transport.requestSecurity(id, level: level, reason: reason)
        return []
    }
    func respondToPairing(_ id: ConnectionID, _ answer: PairingUserAnswer, now: Duration) -> [Never] {
        transport.respondToPairing(id, answer)
        return []
    }
    func requestLink(_ id: ConnectionID, _ request: LinkRequest, now: Duration) -> [Never] {
        transport.requestLink(id, request)
        return []
    }
    func cancelLinkRequest(_ id: ConnectionID, _ kind: LinkRequestKind, now: Duration) -> [Never] {
        transport.cancelLinkRequest(id, kind)
        return []
    }
    func answerGATT(_ id: GATTAccessID, _ result: Result<[UInt8], ATTError>, now: Duration) -> [Never] {
        transport.answerGATT(id, result)
        return []
    }
    func updateGATT(_ handle: AttributeHandle, _ value: [UInt8], now: Duration) -> [Never] {
        transport.updateGATT(handle, value)
        return []
    }
    func tick(now: Duration) -> [Never] { [] }
    var nextDeadline: Duration? { nil }
}
