import DequeModule

/// The user-space BLE host for a peripheral (Core Spec Vol 4 Part E, Vol 3
/// Part A): controller bring-up, advertising, connections, ACL flow control,
/// L2CAP fixed channels (ATT, LE signalling, SMP). Sans-I/O: H4 packets and the
/// current time in, packets to send and events out.
///
/// Outgoing ACL data obeys host flow control: never more packets in the
/// controller than it has LE ACL buffers (credits return with Number Of
/// Completed Packets), and the ATT server's queues drain only as credits allow —
/// the bottom of the notify backpressure.
public struct Host: Sendable {
    public private(set) var configuration: HostConfiguration
    public private(set) var att: ATTServer
    public private(set) var controller = ControllerInfo()
    public private(set) var connections: [UInt16: HostConnection] = [:]
    /// True once bring-up is complete.
    public private(set) var isReady = false
    /// Whether advertising is wanted (the `advertise` control op turns it off).
    public private(set) var advertisingEnabled = true
    /// Whether the controller is advertising (as far as the host knows).
    public private(set) var isAdvertising = false
    /// True after a `.fatal` event: the host sends nothing more until `start` again.
    public private(set) var hasFailed = false

    private var payloads: AdvertisingPayloads?
    private var supportedCommands: HCISupportedCommands?
    // Command flow control (Vol 4 Part E §4.4): one outstanding command.
    private var commandQueue: Deque<HCICommand> = []
    private var outstanding: (command: HCICommand, deadline: Duration)?
    private var commandCredits = 1
    private var advertisingCommandPending = false
    /// The controller refused to advertise while connected: wait for a disconnection.
    private var advertisingBlockedByConnections = false
    // ACL flow control.
    private var aclCredits = 0
    private var inFlight: [UInt16: Int] = [:]
    private var reassemblers: [UInt16: ACLReassembler] = [:]
    /// Fragments of frames already taken from the upper layers, per connection.
    private var pendingFragments: [UInt16: Deque<HCIACLPacket>] = [:]
    /// Whole L2CAP frames (signalling, SMP) waiting for the connection's fragments to drain.
    private var pendingFrames: [UInt16: Deque<L2CAPBasicFrame>] = [:]
    private var roundRobin: [UInt16] = []
    private var signallingIdentifier: UInt8 = 0
    private var now: Duration = .zero

    public init(configuration: HostConfiguration, att: ATTServer) {
        self.configuration = configuration
        self.att = att
    }

    // MARK: - Bring-up

    /// Resets the controller and brings it up; `payloads` are the advertising
    /// and scan-response data built from the config.
    public mutating func start(payloads: AdvertisingPayloads, now: Duration) -> [HostOutput] {
        self.now = now
        self.payloads = payloads
        isReady = false
        isAdvertising = false
        hasFailed = false
        advertisingCommandPending = false
        advertisingBlockedByConnections = false
        commandQueue = [.reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands]
        outstanding = nil
        commandCredits = 1
        return pumpCommands()
    }

    /// The random static address used with `ownAddressType == .random`: the configured
    /// one, else one derived from the controller's public address, so a central that
    /// cached the device finds it again after a restart.
    public var randomAddress: BluetoothAddress {
        configuration.randomAddress ?? .staticRandom(derivedFrom: controller.address)
    }

    /// The address centrals see: the random static one when advertising with it.
    public var advertisedAddress: BluetoothAddress {
        configuration.advertising.ownAddressType == .random ? randomAddress : controller.address
    }

    /// Whether the controller reported support for `command` (false before bring-up read it).
    public func supports(_ command: HCICommand) -> Bool { supportedCommands?.isSupported(command.opcode) ?? false }

    private mutating func enqueueAfterSupportedCommands() {
        commandQueue.append(.readLocalSupportedFeatures)
        commandQueue.append(.leReadLocalSupportedFeatures)
        commandQueue.append(supports(.leReadBufferSizeV2) ? .leReadBufferSizeV2 : .leReadBufferSize)
        commandQueue.append(.setEventMask(.lePeripheral))
        commandQueue.append(.leSetEventMask(.lePeripheral))
    }

    private mutating func enqueueAfterBufferSize() {
        if controller.leFeatures.contains(.dataPacketLengthExtension), supports(.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120)) {
            commandQueue.append(.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120))
        }
        if controller.leFeatures.contains(.le2MPHY), supports(.leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11)) {
            commandQueue.append(.leSetDefaultPHY(allPHYs: 0, txPHYs: 0b11, rxPHYs: 0b11))
        }
        if configuration.advertising.ownAddressType == .random {
            commandQueue.append(.leSetRandomAddress(randomAddress))
        }
        if let p = payloads {
            commandQueue.append(.leSetAdvertisingParameters(p.parameters))
            commandQueue.append(.leSetAdvertisingData(p.advertisingData))
            commandQueue.append(.leSetScanResponseData(p.scanResponseData))
        }
    }

    // MARK: - Input

    /// Feeds one packet from the controller.
    public mutating func receive(_ packet: H4Packet, now: Duration) -> [HostOutput] {
        self.now = now
        return failIfFatal(receive(packet))
    }

    private mutating func receive(_ packet: H4Packet) -> [HostOutput] {
        switch packet.type {
        case .event:
            do {
                let event = try HCIEvent(decoding: packet.body)
                return handle(event)
            } catch {
                return [.event(.warning("malformed HCI event dropped: \(error)"))]
            }
        case .acl:
            do {
                let acl = try HCIACLPacket(decoding: packet.body)
                return handle(acl)
            } catch {
                return [.event(.warning("malformed ACL packet dropped: \(error)"))]
            }
        case .command, .sco, .iso:
            return [.event(.warning("unexpected \(packet.type) packet from the controller dropped"))]
        }
    }

    /// Runs timers: HCI command timeout, ATT timeouts.
    public mutating func tick(now: Duration) -> [HostOutput] {
        self.now = now
        guard !hasFailed else { return [] }
        if let o = outstanding, now >= o.deadline {
            return failIfFatal([.event(.fatal("the controller did not answer \(o.command.name) within \(configuration.commandTimeout)"))])
        }
        var out = absorb(att.tick(now: now))
        out += pumpACL()
        return failIfFatal(out)
    }

    /// After a fatal event nothing more goes to the controller: the packets queued
    /// behind it in `outputs` are dropped and the command queue is cleared.
    private mutating func failIfFatal(_ outputs: [HostOutput]) -> [HostOutput] {
        guard let i = outputs.firstIndex(where: { if case .event(.fatal) = $0 { true } else { false } }) else { return outputs }
        hasFailed = true
        commandQueue = []
        outstanding = nil
        return Array(outputs[...i]) + outputs[(i + 1)...].filter { if case .event = $0 { true } else { false } }
    }

    /// When `tick` should next be called.
    public var nextDeadline: Duration? {
        // A failed host has nothing to time: `tick` would return nothing forever.
        guard !hasFailed else { return nil }
        return [outstanding?.deadline, att.nextDeadline].compactMap { $0 }.min()
    }

    // MARK: - Application calls

    /// `ATTServer.notify`, then sends what the controller has room for.
    public mutating func notify(characteristic: Int, value: [UInt8], only: ConnectionID? = nil, now: Duration) -> (NotifyResult, [HostOutput]) {
        self.now = now
        let r = att.notify(characteristic: characteristic, value: value, only: only, now: now)
        return (r.result, absorb(r.outputs) + pumpACL())
    }

    /// Sets a value without notifying.
    public mutating func setValue(characteristic: Int, value: [UInt8]) -> Bool {
        att.setValue(characteristic: characteristic, value: value)
    }

    /// Answers a forwarded read/write request.
    public mutating func respond(to id: PendingRequestID, result: Result<[UInt8], ATTError>, now: Duration) throws(ATTRespondError) -> [HostOutput] {
        self.now = now
        let outputs = try att.respond(to: id, result: result, now: now)
        return absorb(outputs) + pumpACL()
    }

    /// Whether a control client is watching (forwarded requests go to it).
    public mutating func setControlClientAttached(_ attached: Bool) { att.controlClientAttached = attached }

    // MARK: - Control socket and config reload (added for the control socket)

    /// Answers every pending control request with Unlikely Error (the last control client left).
    public mutating func failPendingRequests(now: Duration) -> [HostOutput] {
        self.now = now
        return absorb(att.failPendingRequests(now: now)) + pumpACL()
    }

    /// Config reload: serves `database` from now on, keeping connections (`ATTServer.replaceDatabase`).
    public mutating func replaceDatabase(_ database: GATTDatabase, now: Duration) -> [HostOutput] {
        self.now = now
        return absorb(att.replaceDatabase(database, now: now)) + pumpACL()
    }

    /// Config reload: new advertising configuration and payloads. When advertising,
    /// it is stopped, reconfigured and started again; otherwise the new data is
    /// set and used the next time advertising starts.
    public mutating func updateAdvertising(_ configuration: HostConfiguration, payloads: AdvertisingPayloads, now: Duration) -> [HostOutput] {
        self.now = now
        var c = configuration
        if c.randomAddress == nil { c.randomAddress = self.configuration.randomAddress }
        let newlyRandom = c.advertising.ownAddressType == .random && self.configuration.advertising.ownAddressType != .random
        self.configuration = c
        self.payloads = payloads
        guard isReady else { return [] }
        if isAdvertising || advertisingCommandPending {
            commandQueue.append(.leSetAdvertisingEnable(false))
            isAdvertising = false
            advertisingCommandPending = false
        }
        if newlyRandom { commandQueue.append(.leSetRandomAddress(randomAddress)) }
        commandQueue.append(.leSetAdvertisingParameters(payloads.parameters))
        commandQueue.append(.leSetAdvertisingData(payloads.advertisingData))
        commandQueue.append(.leSetScanResponseData(payloads.scanResponseData))
        return pumpCommands() + resumeAdvertisingIfPossible()
    }

    /// Starts or stops advertising (the `advertise` control op).
    public mutating func setAdvertising(_ enabled: Bool, now: Duration) -> [HostOutput] {
        self.now = now
        advertisingEnabled = enabled
        if !enabled { return stopAdvertising() }
        // A disable not sent yet is simply dropped; one in flight re-enables on completion.
        commandQueue.removeAll { $0 == .leSetAdvertisingEnable(false) }
        return resumeAdvertisingIfPossible()
    }

    /// Drops an enable not sent yet and disables advertising if it is on. An
    /// enable already sent is followed by a disable when it completes.
    private mutating func stopAdvertising() -> [HostOutput] {
        if commandQueue.contains(.leSetAdvertisingEnable(true)) {
            commandQueue.removeAll { $0 == .leSetAdvertisingEnable(true) }
            advertisingCommandPending = false
        }
        let disabling = commandQueue.contains(.leSetAdvertisingEnable(false)) || outstanding?.command == .leSetAdvertisingEnable(false)
        guard isAdvertising, !disabling else { return [] }
        commandQueue.append(.leSetAdvertisingEnable(false))
        return pumpCommands()
    }

    /// Disconnects one central.
    public mutating func disconnect(_ handle: UInt16, reason: HCIStatus = .remoteUserTerminatedConnection, now: Duration) -> [HostOutput] {
        self.now = now
        guard connections[handle] != nil else { return [] }
        commandQueue.append(.disconnect(handle: handle, reason: reason))
        return pumpCommands()
    }

    /// Stops advertising and disconnects every central politely (Remote User Terminated).
    public mutating func shutdown(now: Duration) -> [HostOutput] {
        self.now = now
        advertisingEnabled = false
        var out = stopAdvertising()
        for h in connections.keys.sorted() { commandQueue.append(.disconnect(handle: h, reason: .remoteUserTerminatedConnection)) }
        out += pumpCommands()
        return out
    }

    /// True when nothing is left to do for a clean shutdown.
    public var isIdle: Bool { connections.isEmpty && commandQueue.isEmpty && outstanding == nil }

    public var maxConnections: Int { configuration.advertising.maxConnections ?? Int.max }

    // MARK: - Events

    private mutating func handle(_ event: HCIEvent) -> [HostOutput] {
        switch event {
        case .commandComplete(let c):
            commandCredits = Int(c.numHCICommandPackets)
            var out = completed(opcode: c.opcode, status: c.status ?? .success, complete: c)
            out += pumpCommands()
            return out
        case .commandStatus(let status, let num, let opcode):
            commandCredits = Int(num)
            var out = completed(opcode: opcode, status: status, complete: nil)
            out += pumpCommands()
            return out
        case .numberOfCompletedPackets(let entries):
            for e in entries {
                let n = min(Int(e.count), inFlight[e.handle] ?? 0)
                inFlight[e.handle] = (inFlight[e.handle] ?? 0) - n
                aclCredits = min(controller.totalACLDataPackets, aclCredits + n)
            }
            return pumpACL()
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == .success else {
                return [.event(.warning("Disconnect of handle \(handle) failed: \(status)"))]
            }
            return connectionClosed(handle, reason: reason)
        case .encryptionChange(let status, let handle, let enabled):
            guard status == .success, var c = connections[handle] else { return [] }
            c.security = enabled != 0 ? .medium : .low
            connections[handle] = c
            att.setSecurity(c.id, c.security)
            return []
        case .hardwareError(let code):
            return [.event(.fatal("the controller reported hardware error 0x\(String(code, radix: 16))"))]
        case .dataBufferOverflow:
            return [.event(.warning("the controller reported a data buffer overflow"))]
        case .leMeta(let meta):
            return handle(meta)
        case .encryptionKeyRefreshComplete, .unknown:
            return []
        }
    }

    private mutating func handle(_ meta: HCILEMetaEvent) -> [HostOutput] {
        switch meta {
        case .connectionComplete(let c), .enhancedConnectionComplete(let c), .enhancedConnectionCompleteV2(let c):
            return connectionOpened(c)
        case .longTermKeyRequest(let handle, _, _):
            // No bonding yet: no key to give (the security issue adds SMP).
            commandQueue.append(.leLongTermKeyRequestNegativeReply(handle: handle))
            return pumpCommands()
        case .remoteConnectionParameterRequest(let handle, let p):
            commandQueue.append(.leRemoteConnectionParameterRequestReply(handle: handle, parameters: p, minCELength: 0, maxCELength: 0))
            return pumpCommands()
        case .dataLengthChange, .phyUpdateComplete, .connectionUpdateComplete, .readRemoteFeaturesComplete, .unknown:
            return []
        }
    }

    private mutating func connectionOpened(_ c: LEConnectionComplete) -> [HostOutput] {
        guard c.status != .success || c.role == .peripheral else {
            // We never initiate: this says nothing about our advertising.
            return [.event(.warning("unexpected connection as central (handle \(c.handle)); ignored"))]
        }
        guard c.status == .success else {
            // A failed attempt (e.g. directed advertising timeout) ends legacy advertising.
            isAdvertising = false
            return [.event(.warning("connection attempt failed: \(c.status)"))] + resumeAdvertisingIfPossible()
        }
        guard connections[c.handle] == nil else {
            // Re-initialising the handle would forget packets in flight (credits) and partial frames.
            return [.event(.warning("LE Connection Complete for connection handle \(c.handle), which is already connected; ignored"))]
        }
        // A connection ends legacy advertising.
        isAdvertising = false
        let conn = HostConnection(handle: c.handle, peerAddress: c.peerAddress, peerAddressType: c.peerAddressType)
        connections[c.handle] = conn
        inFlight[c.handle] = 0
        reassemblers[c.handle] = ACLReassembler()
        pendingFragments[c.handle] = []
        pendingFrames[c.handle] = []
        roundRobin.append(c.handle)
        att.connect(conn.id, security: .low)
        var out: [HostOutput] = [.event(.connected(conn)), .event(.advertisingChanged(false))]
        if configuration.requestDataLengthAndPHY {
            if controller.leFeatures.contains(.dataPacketLengthExtension) {
                commandQueue.append(.leSetDataLength(handle: c.handle, txOctets: 251, txTime: 2120))
            }
            if controller.leFeatures.contains(.le2MPHY) {
                commandQueue.append(.leSetPHY(handle: c.handle, allPHYs: 0, txPHYs: 0b10, rxPHYs: 0b10, phyOptions: 0))
            }
        }
        if let preferred = configuration.advertising.preferredConnection {
            out += sendConnectionParameterUpdateRequest(handle: c.handle, preferred)
        }
        out += pumpCommands()
        out += resumeAdvertisingIfPossible()
        out += pumpACL()
        return out
    }

    private mutating func connectionClosed(_ handle: UInt16, reason: HCIStatus) -> [HostOutput] {
        guard let conn = connections.removeValue(forKey: handle) else { return [] }
        // Packets of a closed connection are flushed: their buffers are free again (Vol 4 Part E §4.3).
        aclCredits = min(controller.totalACLDataPackets, aclCredits + (inFlight[handle] ?? 0))
        inFlight[handle] = nil
        reassemblers[handle] = nil
        pendingFragments[handle] = nil
        pendingFrames[handle] = nil
        roundRobin.removeAll { $0 == handle }
        advertisingBlockedByConnections = false
        var out: [HostOutput] = [.event(.disconnected(conn, reason: reason))]
        out += absorb(att.disconnect(conn.id))
        out += resumeAdvertisingIfPossible()
        out += pumpACL()
        return out
    }

    private mutating func resumeAdvertisingIfPossible() -> [HostOutput] {
        guard isReady, advertisingEnabled, !isAdvertising, !advertisingCommandPending, !advertisingBlockedByConnections,
            connections.count < maxConnections
        else { return [] }
        advertisingCommandPending = true
        commandQueue.append(.leSetAdvertisingEnable(true))
        return pumpCommands()
    }

    // MARK: - Commands

    private mutating func pumpCommands() -> [HostOutput] {
        guard !hasFailed, outstanding == nil, commandCredits > 0, let next = commandQueue.popFirst() else { return [] }
        outstanding = (next, now + configuration.commandTimeout)
        return [.send(H4Packet(command: next))]
    }

    private mutating func completed(opcode: HCIOpcode, status: HCIStatus, complete: HCICommandComplete?) -> [HostOutput] {
        guard let o = outstanding, o.command.opcode == opcode else {
            // A NOP (opcode 0) just grants credits; other strays are ignored.
            return []
        }
        outstanding = nil
        let command = o.command
        var out: [HostOutput] = []
        if status != .success {
            switch command {
            case .leSetAdvertisingEnable(true):
                advertisingCommandPending = false
                if !connections.isEmpty {
                    // Many controllers cannot advertise connectable while connected.
                    advertisingBlockedByConnections = true
                    return [.event(.warning("the controller refused to advertise with \(connections.count) connection(s) (\(status)); advertising resumes after a disconnection"))]
                }
                return [.event(.fatal("LE Set Advertising Enable failed: \(status)"))]
            case .leSetAdvertisingEnable(false):
                isAdvertising = false
                return [.event(.advertisingChanged(false))]
            case .disconnect, .leSetDataLength, .leSetPHY, .leSetDefaultPHY, .leWriteSuggestedDefaultDataLength,
                .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply, .leConnectionUpdate:
                return [.event(.warning("\(command.name) failed: \(status)"))]
            case .leReadBufferSizeV2:
                commandQueue.prepend(.leReadBufferSize)
                return []
            default:
                return [.event(.fatal("\(command.name) failed: \(status)"))]
            }
        }
        do {
            switch command {
            case .readLocalVersionInformation:
                controller.version = try complete?.decode(HCILocalVersionInformation.self)
            case .readBDADDR:
                if let a = try complete?.decode(HCIReadBDADDR.self) { controller.address = a.address }
            case .readLocalSupportedCommands:
                supportedCommands = try complete?.decode(HCISupportedCommands.self)
                enqueueAfterSupportedCommands()
            case .leReadLocalSupportedFeatures:
                if let f = try complete?.decode(HCILELocalSupportedFeatures.self) { controller.leFeatures = f.features }
            case .leReadBufferSizeV2:
                if let b = try complete?.decode(HCILEBufferSizeV2.self) {
                    out += setBuffers(length: Int(b.leACLDataPacketLength), count: Int(b.totalNumLEACLDataPackets))
                }
            case .leReadBufferSize:
                if let b = try complete?.decode(HCILEBufferSize.self) {
                    out += setBuffers(length: Int(b.leACLDataPacketLength), count: Int(b.totalNumLEACLDataPackets))
                }
            case .readBufferSize:
                if let b = try complete?.decode(HCIBufferSize.self) {
                    guard b.aclDataPacketLength > 0, b.totalNumACLDataPackets > 0 else {
                        return [.event(.fatal("the controller reports no ACL data buffers (Read Buffer Size: \(b.totalNumACLDataPackets) × \(b.aclDataPacketLength) bytes)"))]
                    }
                    controller.aclDataPacketLength = Int(b.aclDataPacketLength)
                    controller.totalACLDataPackets = Int(b.totalNumACLDataPackets)
                    aclCredits = controller.totalACLDataPackets
                    enqueueAfterBufferSize()
                }
            case .leSetScanResponseData:
                if !isReady {
                    isReady = true
                    out.append(.event(.controllerReady(controller)))
                    out += resumeAdvertisingIfPossible()
                }
            case .leSetAdvertisingEnable(let on):
                if on { advertisingCommandPending = false }
                isAdvertising = on
                out.append(.event(.advertisingChanged(on)))
                // The advertise op may have flipped while the command was in flight.
                if on && !advertisingEnabled { commandQueue.append(.leSetAdvertisingEnable(false)) }
                if !on { out += resumeAdvertisingIfPossible() }
            default:
                break
            }
        } catch {
            out.append(.event(.fatal("\(command.name) returned malformed parameters: \(error)")))
        }
        return out
    }

    private mutating func setBuffers(length: Int, count: Int) -> [HostOutput] {
        if length == 0 || count == 0 {
            // No dedicated LE buffers: LE shares the ACL buffers (Vol 4 Part E §7.8.2).
            commandQueue.prepend(.readBufferSize)
            return []
        }
        controller.aclDataPacketLength = length
        controller.totalACLDataPackets = count
        aclCredits = count
        enqueueAfterBufferSize()
        return []
    }

    // MARK: - ACL and L2CAP

    private mutating func handle(_ acl: HCIACLPacket) -> [HostOutput] {
        guard connections[acl.handle] != nil, var r = reassemblers[acl.handle] else {
            return [.event(.warning("ACL data for unknown connection handle \(acl.handle) dropped"))]
        }
        let outputs = r.push(acl)
        reassemblers[acl.handle] = r
        var out: [HostOutput] = []
        for o in outputs {
            switch o {
            case .error(let e): out.append(.event(.warning("connection \(acl.handle): \(e)")))
            case .frame(let f): out += handle(frame: f, handle: acl.handle)
            }
        }
        out += pumpACL()
        return out
    }

    private mutating func handle(frame: L2CAPBasicFrame, handle: UInt16) -> [HostOutput] {
        switch frame.channelID {
        case .att:
            return absorb(att.receive(frame.payload, from: ConnectionID(handle), now: now))
        case .leSignalling:
            return handleSignalling(frame.payload, handle: handle)
        case .smp:
            return handleSMP(frame.payload, handle: handle)
        default:
            return [.event(.warning("connection \(handle): L2CAP frame for unsupported CID \(frame.channelID) dropped"))]
        }
    }

    /// Queues a whole L2CAP frame (signalling, SMP) ahead of further ATT PDUs.
    private mutating func queueFrame(_ frame: L2CAPBasicFrame, handle: UInt16) {
        pendingFrames[handle]?.append(frame)
    }

    /// Turns ATT server outputs into host outputs.
    private mutating func absorb(_ outputs: [ATTServerOutput]) -> [HostOutput] {
        var out: [HostOutput] = []
        for o in outputs {
            switch o {
            case .event(let e): out.append(.event(.att(e)))
            case .outgoingAvailable: break  // pumpACL pulls
            case .closeBearer(let id, _):
                if connections[id.rawValue] != nil {
                    commandQueue.append(.disconnect(handle: id.rawValue, reason: .remoteUserTerminatedConnection))
                    out += pumpCommands()
                }
            }
        }
        return out
    }

    /// Sends as many ACL packets as the controller has buffers for, round-robin
    /// over connections, pulling ATT PDUs only when a connection's fragments drained.
    private mutating func pumpACL() -> [HostOutput] {
        guard !hasFailed else { return [] }
        var out: [HostOutput] = []
        var idle = 0
        while aclCredits > 0, !roundRobin.isEmpty, idle < roundRobin.count {
            let h = roundRobin.removeFirst()
            roundRobin.append(h)
            if pendingFragments[h, default: []].isEmpty { out += absorb(refill(h)) }
            guard let packet = pendingFragments[h]?.popFirst() else {
                idle += 1
                continue
            }
            idle = 0
            aclCredits -= 1
            inFlight[h, default: 0] += 1
            out.append(.send(H4Packet(acl: packet)))
        }
        return out
    }

    /// Takes the connection's next L2CAP frame (signalling/SMP first, then ATT)
    /// and fragments it; returns what dequeuing from the ATT server produced
    /// (it can free queue space: the `ready` event).
    private mutating func refill(_ h: UInt16) -> [ATTServerOutput] {
        var frame: L2CAPBasicFrame?
        var outputs: [ATTServerOutput] = []
        if let f = pendingFrames[h]?.popFirst() {
            frame = f
        } else if let next = att.dequeueOutgoing(for: ConnectionID(h)) {
            frame = L2CAPBasicFrame(channelID: .att, payload: next.pdu)
            outputs = next.outputs
        }
        if let frame, let bytes = try? frame.encoded() {
            pendingFragments[h, default: []].append(contentsOf: ACLFragmenter.fragment(bytes, handle: h, maximumDataLength: controller.aclDataPacketLength))
        }
        return outputs
    }

    // MARK: - LE signalling (Vol 3 Part A §4) and SMP (Vol 3 Part H §3)

    private mutating func handleSignalling(_ payload: [UInt8], handle: UInt16) -> [HostOutput] {
        let pdu: LESignallingPDU
        do {
            pdu = try LESignallingPDU(decoding: payload)
        } catch {
            // Without a decodable identifier there is nothing to reject (§4: silently discard).
            guard payload.count >= 2 else { return [.event(.warning("connection \(handle): malformed LE signalling frame dropped"))] }
            queueFrame(LESignallingPDU.commandNotUnderstood(identifier: payload[1]).frame, handle: handle)
            return [.event(.warning("connection \(handle): malformed LE signalling command rejected: \(error)"))]
        }
        if case .connectionParameterUpdateResponse(let result) = pdu.command, result != 0 {
            return [.event(.warning("connection \(handle): the central rejected the preferred connection parameters"))]
        }
        if let response = LESignallingPDU.peripheralResponse(to: pdu) {
            queueFrame(response.frame, handle: handle)
        }
        return []
    }

    private mutating func sendConnectionParameterUpdateRequest(handle: UInt16, _ p: PreferredConnectionParameters) -> [HostOutput] {
        signallingIdentifier = signallingIdentifier == 255 ? 1 : signallingIdentifier + 1
        queueFrame(p.updateRequest(identifier: signallingIdentifier).frame, handle: handle)
        return []
    }

    private mutating func handleSMP(_ payload: [UInt8], handle: UInt16) -> [HostOutput] {
        // Pairing is not supported yet: a Pairing Request gets Pairing Failed, Pairing Not Supported.
        if let response = SMPPDU.responseWithoutPairingSupport(to: payload) {
            queueFrame(L2CAPBasicFrame(channelID: .smp, payload: response.encoded()), handle: handle)
        }
        return []
    }
}
