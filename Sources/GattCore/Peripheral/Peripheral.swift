/// The peripheral: everything both transports share, once, as a sans-I/O value.
/// It owns the ATT server and its bearers, the connection table, the advertising
/// policy and the reload logic. Transport events (`TransportEvent`), the current time
/// and application calls go in; `PeripheralOutput`s (PDUs to send, advertising intents,
/// disconnections, events) come out, in order.
///
/// Backpressure: a PDU goes to a bearer only after the transport's `readyToSend`
/// for it, one PDU per `readyToSend`; the rest waits in the ATT server's bounded queues,
/// which is what makes `notify` answer `.busy`.
public struct Peripheral: Sendable {
    public internal(set) var att: ATTServer
    public internal(set) var connections: [ConnectionID: PeripheralConnection] = [:]
    /// The bearers whose transport said it can take a PDU and none was sent yet.
    var readyBearers: Set<BearerID> = []
    /// Ask each central for this level as soon as it connects (`security.request_security_on_connect`).
    public var securityOnConnect: SecurityLevel?
    /// Every advertising set, the primary one (the config's `advertising`) first, and the list
    /// last asked of the transport (see Peripheral+AdvertisingSets).
    var sets: AdvertisingSets
    public internal(set) var maxConnections: Int
    /// The address centrals see; nil while there is no controller.
    public private(set) var address: BluetoothAddress?
    /// `shutdown()` was called: no more advertising.
    public private(set) var isStopping = false

    public init(
        database: GATTDatabase, payloads: AdvertisingPayloads, otherSets: [AdvertisingSet] = [], maxConnections: Int?,
        att configuration: ATTServerConfiguration = ATTServerConfiguration()
    ) {
        self.att = ATTServer(database: database, configuration: configuration)
        self.sets = AdvertisingSets(primary: payloads, others: otherSets)
        self.maxConnections = maxConnections ?? Int.max
    }

    public var database: GATTDatabase { att.database }
    public var nextDeadline: Duration? { att.nextDeadline }
    /// Nothing left to do for a clean stop: no central, advertising off.
    public var isIdle: Bool { connections.isEmpty && sets.isQuiet }
    /// The connection of a central, by address.
    public func connection(of address: BluetoothAddress) -> ConnectionID? {
        connections.values.filter { $0.address == address }.map(\.id).min { $0.rawValue < $1.rawValue }
    }

    // MARK: - Transport events

    public mutating func handle(_ event: TransportEvent, now: Duration) -> [PeripheralOutput] {
        switch event {
        case .ready(let address, let description, let controller):
            self.address = address
            sets.controllerReady()
            return [.event(.controllerReady(address: address, description: description, controller: controller))] + reconcileAdvertising()
        case .lost(let reason):
            var out: [PeripheralOutput] = []
            for id in connections.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                out += closed(id, reason: .connectionTimeout, detail: reason)
            }
            address = nil
            out += sets.controllerLost()
            return out + [.event(.controllerLost(reason: reason))]
        case .connected(let id, let peer):
            guard connections[id] == nil else { return [.event(.warning("\(id) reported connected twice; ignored"))] }
            let c = PeripheralConnection(id: id, peer: peer)
            connections[id] = c
            att.connect(id, security: peer.security)
            var out: [PeripheralOutput] = [.event(.connected(c))]
            if let level = securityOnConnect, peer.security < level {
                out.append(.requestSecurity(id, level, reason: level.isAuthenticated ? .insufficientAuthentication : .insufficientEncryption))
            }
            return out + reconcileAdvertising()
        case .disconnected(let id, let reason, let detail):
            return closed(id, reason: reason, detail: detail) + reconcileAdvertising()
        case .securityChanged(let id, let level, let keySize):
            guard var c = connections[id] else { return [] }
            att.setSecurity(id, level, keySize: keySize)
            guard c.security != level else { return [] }
            c.security = level
            connections[id] = c
            return [.event(.securityChanged(c))]
        case .pairing(let id, let e):
            guard let c = connections[id] else { return [] }
            // The CSRK the central just distributed verifies its signed writes on this link.
            if case .pairingComplete(let bond, _) = e, let csrk = bond.peerCSRK { att.setCSRK(id, key: csrk) }
            return [.event(.pairing(c, e))]
        case .received(let id, let pdu):
            guard connections.index(forKey: id.connection) != nil else { return [] }
            return absorb(att.receive(pdu, from: id, now: now))
        case .gattAccess(let id, let access, let request):
            guard connections.index(forKey: id) != nil else { return [.answerGATT(access, .failure(.unlikelyError))] }
            return absorb(att.access(request, id: access, from: id, now: now))
        case .gattSubscribers(let valueHandle, let subscribed):
            guard let a = att.database.attribute(at: valueHandle), case .characteristicValue(let c) = a.role else { return [] }
            att.setGATTSubscribers(c, subscribed)
            return []
        case .gattConfirmed(let id, let valueHandle):
            guard let central = connections[id]?.address, let a = att.database.attribute(at: valueHandle), case .characteristicValue(let c) = a.role else { return [] }
            return [.event(.att(.indicationConfirmed(id, characteristic: c), central: central))]
        case .readyToSend(let id):
            // Only for a known connection's bearer: its unenhanced one, or an Enhanced one still open.
            guard connections.index(forKey: id.connection) != nil, !id.isEnhanced || att.mtu(for: id) != nil else { return [] }
            readyBearers.insert(id)
            var out: [PeripheralOutput] = []
            pump(id, into: &out)
            return out
        case .advertisingChanged(let on, let set):
            return sets.changed(set, on: on, advertisingConditions)
        case .advertisingRefused(let whileConnected, let reason, let set):
            return sets.refused(set, whileConnected: whileConnected, reason: reason, connected: !connections.isEmpty)
        case .l2capChannelOpened(let id, let channel):
            return [.event(.l2capChannel(channel, central: connections[id]))]
        case .enhancedBearer(let id, let e):
            return enhancedBearer(id, e, now: now)
        case .linkChanged(let id, let link):
            guard var c = connections[id], c.link.merging(link) != c.link else { return [] }
            c.link = c.link.merging(link)
            connections[id] = c
            return [.event(.linkChanged(c))]
        case .linkRequestFinished(let id, let kind, let result):
            guard let c = connections[id] else { return [] }
            return [.event(.linkRequestFinished(c, kind, result))]
        case .warning(let message):
            return [.event(.warning(message))]
        }
    }

    /// A bonded central's CSRK and the last Sign Counter accepted from it (Vol 3 Part C
    /// §10.4.2), so its signed writes verify on a new link without pairing again.
    public mutating func setSigningKey(_ id: ConnectionID, csrk: [UInt8], lastSignCounter: UInt32?) {
        guard connections[id] != nil else { return }
        att.setCSRK(id, key: csrk, signCounter: lastSignCounter)
    }

    /// The encryption key size below which an encrypted link gets Insufficient Encryption Key
    /// Size (0x0C) for attributes that need encryption (the config's `security.min_key_size`).
    public mutating func setMinimumEncryptionKeySize(_ octets: Int) { att.configuration.minimumKeySize = octets }

    /// Runs timers (indication and deferred-access timeouts).
    public mutating func tick(now: Duration) -> [PeripheralOutput] { absorb(att.tick(now: now)) }

    // MARK: - Application calls

    /// Sets the value and queues it to subscribers (`only`: that connection).
    public mutating func notify(characteristic: CharacteristicIndex, value: [UInt8], only: ConnectionID? = nil, now: Duration) -> (NotifyResult, [PeripheralOutput]) {
        let r = att.notify(characteristic: characteristic, value: value, only: only, now: now)
        return (r.result, absorb(r.outputs))
    }

    /// Sets several values and queues them to subscribers at once (`only`: that connection):
    /// one Multiple Handle Value Notification per client that set Client Supported Features
    /// bit 2 when at least two of its notifications fit a bearer's ATT_MTU whole, else one
    /// PDU per value (`ATTServer.notifyMultiple`). All or nothing.
    public mutating func notify(values: [(characteristic: CharacteristicIndex, value: [UInt8])], only: ConnectionID? = nil, now: Duration) -> (NotifyResult, [PeripheralOutput]) {
        let r = att.notifyMultiple(values, only: only, now: now)
        return (r.result, absorb(r.outputs))
    }

    /// Sets a value without notifying; false when out of range or too long.
    public mutating func setValue(characteristic: CharacteristicIndex, value: [UInt8]) -> Bool {
        att.setValue(characteristic: characteristic, value: value)
    }

    /// Answers a deferred access (`ATTServerEvent.deferredAccess`).
    public mutating func respond(to id: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [PeripheralOutput] {
        absorb(try att.respond(to: id, result: result, now: now))
    }

    /// Whether reads and writes of `.deferred` values can be handed out (someone answers
    /// them); when it becomes false, the outstanding ones are answered with Unlikely Error.
    public mutating func setDeferredAccessAvailable(_ available: Bool, now: Duration) -> [PeripheralOutput] {
        att.deferredAccessAvailable = available
        return available ? [] : absorb(att.failDeferredAccesses(now: now))
    }

    /// The `advertise` control op (`set`: the primary set when nil).
    public mutating func setAdvertisingWanted(_ wanted: Bool, set: String? = nil) -> [PeripheralOutput] {
        sets.setWanted(wanted, set: set ?? AdvertisingSet.primaryID)
        return reconcileAdvertising()
    }

    public func disconnect(_ id: ConnectionID) -> [PeripheralOutput] {
        connections[id] == nil ? [] : [.disconnect(id, reason: .remoteUserTerminatedConnection)]
    }

    /// Stops advertising and disconnects every central politely (Remote User Terminated).
    public mutating func shutdown() -> [PeripheralOutput] {
        isStopping = true
        var out = reconcileAdvertising()
        for id in connections.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            out.append(.disconnect(id, reason: .remoteUserTerminatedConnection))
        }
        return out
    }

    // MARK: - Internals

    private mutating func closed(_ id: ConnectionID, reason: HCIStatus, detail: String?) -> [PeripheralOutput] {
        guard let c = connections.removeValue(forKey: id) else { return [] }
        sets.disconnected()
        readyBearers = readyBearers.filter { $0.connection != id }
        return [.event(.disconnected(c, reason: reason, detail: detail))] + absorb(att.disconnect(id))
    }

    /// Turns ATT server outputs into peripheral outputs.
    mutating func absorb(_ outputs: [ATTServerOutput]) -> [PeripheralOutput] {
        var out: [PeripheralOutput] = []
        absorb(outputs, into: &out)
        return out
    }

    /// `absorb(_:)`, appended to `out`.
    mutating func absorb(_ outputs: [ATTServerOutput], into out: inout [PeripheralOutput]) {
        for o in outputs {
            switch o {
            case .event(let e):
                out.append(.event(.att(e, central: e.connection.flatMap { connections[$0]?.address })))
            case .outgoingAvailable(let id):
                pump(id, into: &out)
            case .closeBearer(let id, let reason) where id.isEnhanced:
                readyBearers.remove(id)
                guard let c = connections[id.connection] else { continue }
                out.append(.event(.warning("\(id): closing an Enhanced ATT bearer of \(c.address) (\(reason))")))
                out.append(.closeEnhancedBearer(id))
            case .closeBearer(let id, let reason):
                // The unenhanced bearer closes with its connection.
                guard let c = connections[id.connection] else { continue }
                out.append(.event(.warning("\(id.connection): closing the link to \(c.address) (\(reason))")))
                out.append(.disconnect(id.connection, reason: .remoteUserTerminatedConnection))
            case .gattAnswer(let id, let result):
                out.append(.answerGATT(id, result))
            case .gattUpdate(let handle, let value):
                out.append(.updateGATT(handle, value))
            }
        }
    }

    /// Sends the bearer's next PDU if its transport has room (one PDU per `.readyToSend`).
    /// (In place: the connection is looked up once and not copied.)
    private mutating func pump(_ id: BearerID, into out: inout [PeripheralOutput]) {
        guard readyBearers.contains(id), let i = connections.index(forKey: id.connection),
            let next = att.dequeueOutgoing(for: id)
        else { return }
        readyBearers.remove(id)
        out.append(.send(id, next.pdu))
        if let reason = Self.securityError(next.pdu), !connections.values[i].securityRequested {
            connections.values[i].securityRequested = true
            out.append(.requestSecurity(id.connection, .medium, reason: reason))
        }
        absorb(next.outputs, into: &out)
    }

    /// An Error Response for Insufficient Authentication (0x05) or Insufficient
    /// Encryption (0x0F), Core Spec Vol 3 Part F §3.4.1.1.
    static func securityError(_ pdu: [UInt8]) -> ATTError? {
        guard pdu.count == 5, pdu[0] == ATTOpcode.errorResponse.rawValue else { return nil }
        return pdu[4] == ATTError.insufficientAuthentication.rawValue ? .insufficientAuthentication
            : pdu[4] == ATTError.insufficientEncryption.rawValue ? .insufficientEncryption : nil
    }

    /// What the advertising policy needs of the peripheral now.
    var advertisingConditions: AdvertisingSets.Conditions {
        AdvertisingSets.Conditions(stopping: isStopping, connections: connections.count, maxConnections: maxConnections)
    }

    /// Asks the transport to start or stop advertising sets when the policy says so: each set's
    /// state moves, then the transport gets the whole list of sets if it changed.
    mutating func reconcileAdvertising() -> [PeripheralOutput] { sets.reconcile(advertisingConditions) }
}

extension ATTServerEvent {
    /// The connection the event concerns, if any.
    public var connection: ConnectionID? {
        switch self {
        case .mtuExchanged(let id, _), .subscriptionChanged(let id, _, _, _), .written(let id, _, _),
            .descriptorWritten(let id, _, _), .clientFeaturesChanged(let id, _), .deferredAccess(_, let id, _),
            .writeCommand(let id, _, _), .indicationConfirmed(let id, _), .indicationTimedOut(let id, _),
            .indicationUnconfirmed(let id, _):
            return id
        case .requestTimedOut, .ready:
            return nil
        }
    }
}
