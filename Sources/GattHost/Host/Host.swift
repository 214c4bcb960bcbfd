import GattCore

/// The user-space BLE host below the seam (Core Spec Vol 4 Part E, Vol 3 Part A) for H4
/// transports. It moves ATT PDUs; the peripheral core above it (`Peripheral`) serves them.
/// Sans-I/O: H4 packets, the current time and the core's intents in; packets to send and
/// events out. It keeps the entry points and routes between its parts, each owning its
/// state: controller bring-up (`ControllerBringUp`), HCI command flow control
/// (`HCICommandQueue`), advertising (`HostAdvertising`: legacy or extended, chosen at
/// bring-up), the LE links (`HostLinkTable`) and their parameters (`LinkProcedures`), ACL
/// flow control (`ACLScheduler`), the Security Manager (`HostSecurity`), our private
/// addresses (`HostPrivacy`) and the credit-based channels (`CreditBasedChannels`); the L2CAP
/// fixed channels (ATT, LE signalling, SMP) are dispatched here (`Host+Links`).
public struct Host: Sendable {
    public internal(set) var configuration: HostConfiguration
    /// What bring-up learned of the controller.
    public var controller: ControllerInfo { bringUp.controller }
    /// The LE links: each one's connection, ACL reassembler and warnings about its central.
    var linkTable = HostLinkTable()
    /// The live LE connections.
    public var connections: [UInt16: HostConnection] { linkTable.connections }
    /// Each link's parameters, PHYs and data length, and what a program asked of it
    /// (`Host+LinkRequests`).
    var linkProcedures = LinkProcedures()
    /// Each link's parameters, PHYs and data length as the controller reported them.
    public var links: [UInt16: LinkParameters] { linkProcedures.links }
    /// Controller bring-up: its phase, what the controller said, the commands that follow.
    var bringUp = ControllerBringUp()
    /// Bring-up under way, complete, or given up.
    public var phase: HostPhase { bringUp.phase }
    /// Bring-up is complete (and the controller not given up).
    public var isReady: Bool { phase == .ready }
    /// After a `.fatal` event: the host sends nothing more until `start` again.
    public var hasFailed: Bool { phase == .failed }
    /// The controller's advertising, as commands drive it (legacy until bring-up chooses).
    var advertising: HostAdvertising = .legacy(AdvertisingRotation())

    var commands: HCICommandQueue
    var acl = ACLScheduler()
    /// The identifiers of our LE signalling requests, on every link.
    var signalling = SignallingIdentifiers()
    /// The credit-based channels of the links and which are Enhanced ATT bearers.
    var channels = CreditBasedChannels()
    var now: Duration = .zero
    /// The Security Manager of each link, the bonds, the repeated-attempts back-off.
    var security = HostSecurity()
    /// Our resolvable private addresses.
    var privacy = HostPrivacy()

    public init(configuration: HostConfiguration) {
        self.configuration = configuration
        self.commands = HCICommandQueue(timeout: configuration.commandTimeout)
    }

    // MARK: - Bring-up

    /// Resets the controller and brings it up; `.ready` follows.
    public mutating func start(now: Duration) -> [HostOutput] {
        self.now = now
        advertising = .legacy(AdvertisingRotation())
        commands.reset(with: bringUp.start())
        return pumpCommands()
    }

    /// The random static address used with `ownAddressType == .random`: the configured
    /// one, else one derived from the controller's public address, so a central that
    /// cached the device finds it again after a restart.
    public var randomAddress: BluetoothAddress {
        configuration.randomAddress ?? .staticRandom(derivedFrom: controller.address)
    }

    /// The address centrals see: the random static one or the current private one when
    /// advertising with them.
    public var advertisedAddress: BluetoothAddress {
        switch configuration.advertising.ownAddressType {
        case .public: controller.address
        case .random: randomAddress
        case .rpa: privacy.address ?? randomAddress
        }
    }

    /// The random address our advertising uses with a random own address: the static one,
    /// or the current private one (nil with a public own address).
    var advertisingRandomAddress: BluetoothAddress? {
        switch configuration.advertising.ownAddressType {
        case .public: nil
        case .random: randomAddress
        case .rpa: privacy.address ?? randomAddress
        }
    }

    /// Whether the advertising sets take turns (a controller with legacy advertising only,
    /// `AdvertisingRotation`) rather than all being on the air at once (extended
    /// advertising, one advertising handle per set). Nil until bring-up chose.
    public var advertisingSetsTakeTurns: Bool? {
        isReady ? controller.advertisingSetsTakeTurns : nil
    }

    /// Whether the controller reported support for `command` (false before bring-up read it).
    public func supports(_ command: HCICommand) -> Bool { bringUp.supports(command) }

    /// The buffers are known: with a random own address, the controller's (an extended set
    /// carries its own, Vol 4 Part E §7.8.52, set with its configuration).
    mutating func setOwnAddress() {
        let legacy = controller.advertisingCommands == .legacy
        switch configuration.advertising.ownAddressType {
        case .public: break
        case .random: if legacy { commands.append(.leSetRandomAddress(randomAddress)) }
        case .rpa:
            let address = newPrivateAddress()
            if legacy { commands.append(.leSetRandomAddress(address)) }
        }
    }

    /// Bring-up is complete: the controller is ready for advertising and connections.
    mutating func becameReady() -> [HostOutput] {
        guard phase == .bringingUp(buffersKnown: true) else { return [] }
        bringUp.phase = .ready
        if case .extended(let sets, let length) = controller.advertisingCommands {
            advertising = .extended(ExtendedAdvertisingSets(limit: sets, maximumDataLength: length))
        }
        return [.event(.controllerReady(controller)), .event(.transport(.ready(address: advertisedAddress, description: controller.summary, controller: controller)))]
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
            if acl.completed(eventBody: packet.body) { return pumpACL() }
            do {
                return handle(try HCIEvent(decoding: packet.body))
            } catch {
                return [.event(.warning("malformed HCI event dropped: \(error)"))]
            }
        case .acl:
            if let handle = linkTable.wholeATTFrame(packet.body) {
                var out: [HostOutput] = [.event(.transport(.received(.fixed(ConnectionID(handle)), Array(packet.body[HostLinkTable.frameHeaderLength...]))))]
                pumpACL(into: &out)
                return out
            }
            do {
                return handle(try HCIACLPacket(decoding: packet.body))
            } catch {
                return [.event(.warning("malformed ACL packet dropped: \(error)"))]
            }
        case .command, .sco, .iso:
            return [.event(.warning("unexpected \(packet.type) packet from the controller dropped"))]
        }
    }

    /// Runs the HCI command timeout. An optional command that gets no answer is given up
    /// and the queue goes on; a mandatory one, or a second silence in a row, means the
    /// controller stopped answering (fatal).
    public mutating func tick(now: Duration) -> [HostOutput] {
        self.now = now
        guard !hasFailed else { return [] }
        let smp = security.tick(now: now, acl: &acl) + channels.expireDisconnections(now: now)
        var renewed = renewPrivateAddressIfDue()
        if isReady, let turn = advertising.tick(now: now) {
            commands.append(contentsOf: turn)
            renewed = true
        }
        guard let command = commands.expire(now: now) else { return smp.isEmpty && !renewed ? [] : smp + pumpCommands() + pumpACL() }
        let what = "the controller did not answer \(command.name) within \(configuration.commandTimeout)"
        guard isReady, command.isOptional, commands.consecutiveTimeouts < 2 else {
            return failIfFatal(smp + [.event(.fatal(what))])
        }
        return smp + [.event(.warning("\(what); going on without it"))] + pumpCommands() + pumpACL()
    }

    /// After a fatal event nothing more goes to the controller: the packets queued
    /// behind it in `outputs` are dropped and the command queue is cleared.
    private mutating func failIfFatal(_ outputs: [HostOutput]) -> [HostOutput] {
        guard let i = outputs.firstIndex(where: { if case .event(.fatal) = $0 { true } else { false } }) else { return outputs }
        bringUp.phase = .failed
        commands.reset()
        return Array(outputs[...i]) + outputs[(i + 1)...].filter { if case .event = $0 { true } else { false } }
    }

    /// When `tick` should next be called.
    public var nextDeadline: Duration? {
        // (No array: the transport asks after every event.)
        guard !hasFailed else { return nil }
        var next = commands.deadline
        if let d = security.deadline, next.map({ d < $0 }) ?? true { next = d }
        if isReady, let d = privacy.renewal, next.map({ d < $0 }) ?? true { next = d }
        if isReady, let d = advertising.deadline, next.map({ d < $0 }) ?? true { next = d }
        if let d = channels.deadline, next.map({ d < $0 }) ?? true { next = d }
        return next
    }

    // MARK: - The core's intents

    /// One ATT PDU on a bearer (after `readyToSend` named it): on the fixed ATT channel, or
    /// segmented into K-frames on an Enhanced ATT bearer's channel. It goes out at the next
    /// `flush`, so that PDUs for several connections share the buffers round-robin. Longer
    /// than an Enhanced ATT channel's MTU (the core never makes one): dropped.
    public mutating func send(_ pdu: [UInt8], on bearer: BearerID) {
        guard bearer.isEnhanced else { return acl.queue(att: pdu, on: bearer.connection.rawValue) }
        channels.queue(att: pdu, on: bearer, acl: &acl)
    }

    /// Sends the queued ATT PDUs as far as the controller's buffers allow.
    public mutating func flush(now: Duration) -> [HostOutput] {
        self.now = now
        return pumpACL()
    }

    /// Advertise exactly these sets, stop the others: on a controller with extended
    /// advertising all at once (as many as it has), else taking turns. A set that cannot be
    /// advertised is reported refused (`TransportEvent.advertisingRefused`, naming the set).
    public mutating func setAdvertising(_ sets: [AdvertisingSet], now: Duration) -> [HostOutput] {
        self.now = now
        guard isReady, !hasFailed else { return [] }
        let (events, batch) = advertising.setDesired(sets, randomAddress: advertisingRandomAddress, now: now)
        if let batch { commands.append(contentsOf: batch) }
        return events.map { .event(.transport($0)) } + pumpCommands()
    }

    /// Reload: a new random address or preferred connection parameters apply from now on.
    public mutating func updateConfiguration(_ new: HostConfiguration, now: Duration) -> [HostOutput] {
        self.now = now
        var c = new
        if c.randomAddress == nil { c.randomAddress = configuration.randomAddress }
        let old = configuration.advertising.ownAddressType
        if c.localIRK == nil { c.localIRK = configuration.localIRK }
        configuration = c
        guard isReady, c.advertising.ownAddressType != old else { return [] }
        if case .extended = controller.advertisingCommands {
            // The set's next configuration, or a pause around its new address when it is on.
            if c.advertising.ownAddressType == .rpa { _ = newPrivateAddress() } else { privacy.stopRenewing() }
            if let address = advertisingRandomAddress { commands.append(contentsOf: advertising.changeAddress(address)) }
            return pumpCommands()
        }
        switch c.advertising.ownAddressType {
        case .public: privacy.stopRenewing()
        case .random:
            privacy.stopRenewing()
            commands.append(.leSetRandomAddress(randomAddress))
        case .rpa: commands.append(.leSetRandomAddress(newPrivateAddress()))
        }
        return pumpCommands()
    }

    /// Disconnects one central.
    public mutating func disconnect(_ id: ConnectionID, reason: HCIStatus = .remoteUserTerminatedConnection, now: Duration) -> [HostOutput] {
        self.now = now
        guard connections[id.rawValue] != nil else { return [] }
        commands.append(.disconnect(handle: id.rawValue, reason: reason))
        return pumpCommands()
    }

    /// True when no central is connected and no command is queued or outstanding.
    public var isIdle: Bool { connections.isEmpty && commands.isEmpty }

    // MARK: - Commands

    mutating func pumpCommands() -> [HostOutput] {
        guard !hasFailed, let next = commands.next(now: now) else { return [] }
        return [.send(H4Packet(command: next))]
    }
}
