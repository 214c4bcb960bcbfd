import GattCore

/// The core path as the daemon wires it, without sockets: `Host` (HCI, ACL, L2CAP, H4
/// packets) and the `Peripheral` core (ATT server), with a scripted controller that brings
/// the host up, connects one central and reports every ACL packet as transmitted (Number
/// Of Completed Packets) as soon as the host sends it.
public struct CoreStack {
    public var host: Host
    public var core: Peripheral
    public var now: Duration = .zero
    /// Connection handle of the central.
    public let handle: UInt16 = 0x0040
    /// H4 packets sent since the last `takeSent()`.
    public private(set) var sentBytes = 0
    public private(set) var sentPackets = 0
    var pending: [TransportEvent] = []
    var draining = false
    var unanswered: [[UInt8]] = []
    var aclInFlight = 0

    /// `config`: the JSON text of a gattd config. `aclBuffer`: the controller's LE ACL data
    /// packet length (27 or 251).
    public init(config: [UInt8], aclBuffer: UInt16 = 27, aclBuffers: UInt8 = 8) {
        let configuration: GattConfiguration
        let payloads: AdvertisingPayloads
        do {
            configuration = try ConfigLoader.load(data: config)
            payloads = try configuration.advertisingPayloads()
        } catch {
            fatalError("benchmark setup: the config does not load: \(error)")
        }
        var hostConfiguration = HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising)
        hostConfiguration.randomAddress = BluetoothAddress("C0:11:22:33:44:55")
        host = Host(configuration: hostConfiguration)
        core = Peripheral(database: configuration.makeDatabase(), payloads: payloads, maxConnections: configuration.advertising.maxConnections)
        ScriptedController.aclBuffer = (aclBuffer, aclBuffers)
        take(host.start(now: now))
        var rounds = 0
        while !host.isReady, !unanswered.isEmpty, rounds < 200 {
            answerOne()
            rounds += 1
        }
        guard host.isReady else { fatalError("benchmark setup: the scripted controller did not bring the host up") }
        // LE Connection Complete (Vol 4 Part E §7.7.65.1): handle, peripheral role, a random peer.
        deliver(H4Packet(type: .event, body: [
            0x3E, 19, 0x01, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x01, 0x01,
            0x01, 0x02, 0x03, 0x04, 0x05, 0xC6, 24, 0, 0, 0, 72, 0, 0,
        ]))
        guard !core.connections.isEmpty else { fatalError("benchmark setup: the central did not connect") }
        resetCounters()
    }

    public mutating func resetCounters() {
        sentBytes = 0
        sentPackets = 0
    }

    /// The central sends one ATT PDU (one ACL packet); everything it causes is run.
    public mutating func receive(att pdu: [UInt8]) {
        let length = pdu.count
        var body: [UInt8] = [UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8((length + 4) & 0xFF), UInt8((length + 4) >> 8)]
        body += [UInt8(length & 0xFF), UInt8(length >> 8), 0x04, 0x00]
        body += pdu
        deliver(H4Packet(type: .acl, body: body))
    }

    /// The application pushes a value (as a control `notify` does after decoding).
    @discardableResult
    public mutating func notify(characteristic: Int, value: [UInt8]) -> NotifyResult {
        let (result, outputs) = core.notify(characteristic: characteristic, value: value, now: now)
        perform(outputs)
        return result
    }

    mutating func deliver(_ packet: H4Packet) {
        take(host.receive(packet, now: now))
        while !unanswered.isEmpty { answerOne() }
    }

    mutating func answerOne() {
        let command = unanswered.removeFirst()
        take(host.receive(H4Packet(type: .event, body: ScriptedController.answer(command)), now: now))
    }

    mutating func take(_ outputs: [HostOutput]) {
        for output in outputs {
            switch output {
            case .send(let packet):
                sentPackets += 1
                sentBytes += 1 + packet.body.count
                switch packet.type {
                case .command: unanswered.append(packet.body)
                case .acl: aclInFlight += 1
                default: break
                }
            case .event(.transport(let e)):
                pending.append(e)
            case .event(.fatal(let reason)):
                fatalError("benchmark: the host failed: \(reason)")
            case .event:
                break
            }
        }
        drain()
    }

    /// Feeds the core the host's events in order (never re-entrantly), then reports the ACL
    /// packets sent as completed, as the controller does once they are on air.
    mutating func drain() {
        guard !draining else { return }
        draining = true
        defer { draining = false }
        repeat {
            while !pending.isEmpty {
                let e = pending.removeFirst()
                perform(core.handle(e, now: now))
            }
            if aclInFlight > 0 {
                let n = aclInFlight
                aclInFlight = 0
                // Number Of Completed Packets: one handle, n packets.
                take(host.receive(H4Packet(type: .event, body: [
                    0x13, 5, 1, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(n & 0xFF), UInt8(n >> 8),
                ]), now: now))
            }
        } while !pending.isEmpty || aclInFlight > 0
    }

    /// Performs the core's outputs on the host, then sends what they queued.
    mutating func perform(_ outputs: [PeripheralOutput]) {
        for output in outputs {
            switch output {
            case .send(let id, let pdu): host.send(pdu, on: id)
            case .setAdvertising(let sets): take(host.setAdvertising(sets.first(where: \.isPrimary)?.payloads, now: now))
            case .disconnect(let id, let reason): take(host.disconnect(id, reason: reason, now: now))
            case .requestSecurity, .event: break
            }
        }
        take(host.flush(now: now))
    }
}

/// Answers commands like a capable controller: LE with data length extension and 2M PHY,
/// every command supported, `aclBuffer` LE ACL buffers.
enum ScriptedController {
    nonisolated(unsafe) static var aclBuffer: (length: UInt16, count: UInt8) = (27, 8)
    static let commandStatusOpcodes: Set<HCIOpcode> = [.disconnect, .leSetPHY, .leConnectionUpdate]

    static func answer(_ command: [UInt8]) -> [UInt8] {
        let opcode = HCIOpcode(rawValue: UInt16(command[0]) | UInt16(command[1]) << 8)
        let op = [command[0], command[1]]
        if commandStatusOpcodes.contains(opcode) { return [HCIEvent.commandStatusCode, 4, 0x00, 1] + op }
        let parameters = [0x00] + returnParameters(opcode, Array(command.dropFirst(3)))
        return [HCIEvent.commandCompleteCode, UInt8(3 + parameters.count), 1] + op + parameters
    }

    static func returnParameters(_ opcode: HCIOpcode, _ parameters: [UInt8]) -> [UInt8] {
        let (length, count) = aclBuffer
        switch opcode {
        case .readLocalVersionInformation: return [0x0C, 0x34, 0x12, 0x0C, 0xF1, 0x05, 0x78, 0x56]
        case .readBDADDR: return [0x01, 0x00, 0x00, 0xEE, 0xFF, 0xC0]
        case .readLocalSupportedCommands: return [UInt8](repeating: 0xFF, count: 64)
        case .readLocalSupportedFeatures: return [0, 0, 0, 0, 0x40, 0, 0, 0]
        case .leReadLocalSupportedFeatures: return [0x21, 0x01, 0, 0, 0, 0, 0, 0]
        case .leReadBufferSize: return [UInt8(length & 0xFF), UInt8(length >> 8), count]
        case .leReadBufferSizeV2: return [UInt8(length & 0xFF), UInt8(length >> 8), count, 251, 0, 4]
        case .readBufferSize: return [UInt8(length & 0xFF), UInt8(length >> 8), 64, count, 0, 0, 0]
        case .leSetDataLength, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply,
            .leRemoteConnectionParameterRequestNegativeReply:
            return Array(parameters.prefix(2))
        default: return []
        }
    }
}
