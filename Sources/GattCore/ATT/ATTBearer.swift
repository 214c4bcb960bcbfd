import DequeModule

/// Per-bearer ATT state kept by `ATTServer` (Core Spec Vol 3 Part F §3.2.11, §3.3.2): each
/// ATT bearer has its own ATT_MTU, its own request/response transaction and its own
/// indication/confirmation transaction (§3.3.3), and its own outgoing queue. What belongs to
/// the client whatever bearer it uses is in `ATTClient`.
struct ATTBearer: Sendable {
    /// ATT_MTU (§3.2.8); 23 on the fixed bearer until an Exchange MTU, the L2CAP channel's
    /// MTU on an Enhanced ATT bearer (§3.2.8: no Exchange MTU there).
    var mtu: Int = 23
    var mtuExchanged = false

    /// PDUs waiting for the transport to pull them.
    var outgoing: Deque<OutgoingPDU> = []
    /// Notifications and indications in `outgoing`.
    var queuedUpdates = 0
    /// Indications waiting behind the outstanding one.
    var waitingIndications: Deque<WaitingIndication> = []
    /// The indication sent and not yet confirmed, with its transaction deadline.
    var outstandingIndication: (characteristic: CharacteristicIndex, deadline: Duration)?

    /// A request waiting for its deferred accesses to be answered; later PDUs are held.
    var pending: PendingOperation?
    var held: Deque<[UInt8]> = []

    /// Notifications/indications counted against `maxQueuedUpdates`.
    var updateCount: Int { queuedUpdates + waitingIndications.count }

    /// Holds a PDU that came while a request waits (up to `max` of them); false when none waits.
    mutating func hold(_ pdu: [UInt8], max: Int) -> Bool {
        guard pending != nil else { return false }
        if held.count < max { held.append(pdu) }
        return true
    }

    /// An update for this bearer (`pdu`, of characteristic `c`): the PDU to enqueue now, or nil
    /// for an indication that waits behind the outstanding one (§3.4.7.2: one at a time; an
    /// indication that goes out is due by `deadline`).
    mutating func takeUpdate(_ pdu: [UInt8], indication: Bool, of c: CharacteristicIndex, deadline: Duration) -> [UInt8]? {
        guard indication else { return pdu }
        guard outstandingIndication == nil else {
            waitingIndications.append(.init(characteristic: c, bytes: pdu))
            return nil
        }
        outstandingIndication = (c, deadline)
        return pdu
    }

    /// A Handle Value Confirmation (§3.4.7.3): the confirmed indication's characteristic
    /// (nil: none outstanding), and the next waiting indication to send, due by `nextDeadline`.
    mutating func confirm(nextDeadline: Duration) -> (confirmed: CharacteristicIndex, next: [UInt8]?)? {
        guard let o = outstandingIndication else { return nil }
        outstandingIndication = nil
        guard let next = waitingIndications.popFirst() else { return (o.characteristic, nil) }
        outstandingIndication = (next.characteristic, nextDeadline)
        return (o.characteristic, next.bytes)
    }

    /// An update PDU made for another bearer, for one of ATT_MTU `mtu`: a notification or
    /// indication with its value cut to ATT_MTU-3 (§3.4.7.1), a Multiple Handle Value
    /// Notification as it is when it fits, else one notification per value.
    static func fit(_ pdu: [UInt8], mtu: Int) -> [[UInt8]] {
        guard pdu.count > mtu else { return [pdu] }
        guard pdu.first == ATTOpcode.multipleHandleValueNotification.rawValue,
            case .multipleHandleValueNotification(let values)? = try? ATTPDU(decoding: pdu)
        else { return [Array(pdu.prefix(mtu))] }
        return values.map { ATTPDU.handleValue(indication: false, handle: $0.handle, value: $0.value.prefix(mtu - 3)) }
    }

    /// The database was replaced (`map` from `old` to `new`): a waiting commit's writes move to
    /// their attributes' new handles, indications waiting behind the outstanding one are
    /// dropped (their handles may be stale), the outstanding one keeps its characteristic.
    mutating func databaseReplaced(_ map: CharacteristicKeyMap, from old: GATTDatabase, to new: GATTDatabase) {
        if case .commit(let op, let writes)? = pending?.kind {
            pending?.kind = .commit(op, writes: map.writes(writes, from: old, to: new))
        }
        waitingIndications = []
        if let o = outstandingIndication {
            outstandingIndication = (map[o.characteristic] ?? GATTDatabase.BuiltIn.serviceChanged.index, o.deadline)
        }
    }

    struct OutgoingPDU: Sendable {
        var bytes: [UInt8]
        var isUpdate: Bool
    }

    struct WaitingIndication: Sendable {
        var characteristic: CharacteristicIndex
        var bytes: [UInt8]
    }
}
