import GattCore
import GattHost
import GattTestSupport

/// The core path as the daemon wires it, without sockets: the `Peripheral` core (ATT server)
/// on `Host` (HCI, ACL, L2CAP, H4 packets) in the daemon's `PeripheralStack`, with a scripted
/// controller that brings the host up, connects one central and reports every ACL packet as
/// transmitted (Number Of Completed Packets) as soon as a turn of the stack is over.
public struct CoreStack {
    let stack: PeripheralStack<Host>
    let counters = Counters()
    public var host: Host { stack.below }
    public var core: Peripheral { stack.core }
    public var now: Duration = .zero
    /// Connection handle of the central.
    public let handle: UInt16 = 0x0040
    /// H4 bytes and packets sent since `resetCounters()`.
    public var sentBytes: Int { counters.sentBytes }
    public var sentPackets: Int { counters.sentPackets }

    /// `config`: the JSON text of a gattd config. `aclBuffer`: the controller's LE ACL data
    /// packet length (27 or 251).
    public init(config: [UInt8], aclBuffer: UInt16 = 27, aclBuffers: UInt8 = 8) {
        let configuration: GattConfiguration
        let payloads: AdvertisingPayloads
        do {
            configuration = try ConfigLoader.load(data: config).gatt
            payloads = try configuration.advertisingPayloads()
        } catch {
            fatalError("benchmark setup: the config does not load: \(error)")
        }
        var hostConfiguration = HostConfiguration(deviceName: configuration.name, advertising: configuration.advertising)
        hostConfiguration.randomAddress = BluetoothAddress("C0:11:22:33:44:55")
        stack = PeripheralStack(
            core: Peripheral(database: configuration.makeDatabase(), payloads: payloads, maxConnections: configuration.advertising.maxConnections),
            below: Host(configuration: hostConfiguration))
        // A capable controller: every command, `aclBuffers` ACL buffers of `aclBuffer` bytes.
        var controller = ScriptedController()
        controller.supportsEveryCommand = true
        controller.leBuffers = (aclBuffer, aclBuffers)
        controller.aclBuffers = (aclBuffer, UInt16(aclBuffers))
        counters.controller = controller
        stack.onBelowOutput = { [counters] in counters.count($0) }
        stack.callBelow(now: now) { [now] in $0.start(now: now) }
        var rounds = 0
        while !host.isReady, !counters.unanswered.isEmpty, rounds < 200 {
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
        counters.sentBytes = 0
        counters.sentPackets = 0
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
    public mutating func notify(characteristic: CharacteristicIndex, value: [UInt8]) -> NotifyResult {
        let (result, outputs) = stack.core.notify(characteristic: characteristic, value: value, now: now)
        stack.perform(outputs, now: now)
        complete()
        return result
    }

    func deliver(_ packet: H4Packet) {
        stack.callBelow(now: now) { [now] in $0.receive(packet, now: now) }
        complete()
    }

    func answerOne() {
        let event = counters.controller.answer(command: counters.unanswered.removeFirst())
        stack.callBelow(now: now) { [now] in $0.receive(H4Packet(type: .event, body: event), now: now) }
    }

    /// Answers the commands sent and reports the ACL packets sent as completed, as the
    /// controller does once they are on air, until the host sends nothing more.
    func complete() {
        while !counters.unanswered.isEmpty || counters.aclInFlight > 0 {
            while !counters.unanswered.isEmpty { answerOne() }
            let n = counters.aclInFlight
            guard n > 0 else { continue }
            counters.aclInFlight = 0
            // Number Of Completed Packets: one handle, n packets.
            let event: [UInt8] = [0x13, 5, 1, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(n & 0xFF), UInt8(n >> 8)]
            stack.callBelow(now: now) { [now] in $0.receive(H4Packet(type: .event, body: event), now: now) }
        }
    }
}

/// What the host sent, as the scripted controller sees it (a class: the stack's callback counts into it).
final class Counters {
    var controller = ScriptedController()
    var sentBytes = 0
    var sentPackets = 0
    var unanswered: [[UInt8]] = []
    var aclInFlight = 0

    func count(_ output: HostOutput) {
        switch output {
        case .send(let packet):
            sentPackets += 1
            sentBytes += 1 + packet.body.count
            switch packet.type {
            case .command: unanswered.append(packet.body)
            case .acl: aclInFlight += 1
            default: break
            }
        case .event(.fatal(let reason)):
            fatalError("benchmark: the host failed: \(reason)")
        case .event:
            break
        }
    }
}
