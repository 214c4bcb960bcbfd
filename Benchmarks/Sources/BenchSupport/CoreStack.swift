import GattCore
import GattHost
import GattTestSupport
import GattTransport

/// The core path without sockets, in the composition the daemon runs
/// (`PeripheralStack<H4Host>` or `PeripheralStack<KernelAdapter>`, wired by `attachShell`): the
/// `Peripheral` core (ATT server) over one transport's sans-I/O value, with a stand-in shell.
/// - `.h4`: the H4 host (HCI, ACL, L2CAP, H4 packets); a scripted controller brings it up,
///   connects one central and reports every ACL packet as transmitted (Number Of Completed
///   Packets) as soon as a turn of the stack is over.
/// - `.kernel`: the kernel transport's rules (`KernelAdapter`); the shell accepts one central's
///   ATT socket and reports every PDU written as sent (`.readyToSend`), as the kernel's socket
///   does when it has room.
public struct CoreStack {
    public enum Transport: Sendable { case h4, kernel }


    let stack: any PeripheralStackDriving
    /// The stand-in shell, of the transport's kind.
    enum Shell {
        case h4(HostCounters)
        case kernel(KernelCounters)
    }
    let shell: Shell
    var counters: Counters {
        switch shell {
        case .h4(let c): c
        case .kernel(let c): c
        }
    }
    public var core: Peripheral { stack.core }
    /// Benchmarks run at time zero.
    public let now: Duration = .zero
    /// Connection handle of the central.
    public let handle: UInt16 = 0x0040
    /// The central's ATT socket (kernel).
    static let socket = 1
    /// Bytes and packets (H4 packets, or ATT PDUs on the kernel's socket) sent since `resetCounters()`.
    public var sentBytes: Int { counters.sentBytes }
    public var sentPackets: Int { counters.sentPackets }

    /// `config`: the JSON text of a gattd config. `aclBuffer`: the controller's LE ACL data
    /// packet length (27 or 251; H4 only).
    public init(config: [UInt8], transport: Transport = .h4, aclBuffer: UInt16 = 27, aclBuffers: UInt8 = 8) {
        let configuration: GattConfiguration
        let payloads: AdvertisingPayloads
        do {
            configuration = try ConfigLoader.load(data: config).gatt
            payloads = try configuration.advertisingPayloads()
        } catch {
            fatalError("benchmark setup: the config does not load: \(error)")
        }
        let core = Peripheral(database: configuration.makeDatabase(), payloads: payloads, maxConnections: configuration.advertising.maxConnections)
        switch transport {
        case .h4:
            // A capable controller: every command, `aclBuffers` ACL buffers of `aclBuffer` bytes.
            var controller = ScriptedController()
            controller.supportsEveryCommand = true
            controller.leBuffers = (aclBuffer, aclBuffers)
            controller.aclBuffers = (aclBuffer, UInt16(aclBuffers))
            let h4 = HostCounters(controller: controller, handle: handle)
            shell = .h4(h4)
            let s = PeripheralStack(core: core, below: H4Host(configuration: configuration))
            s.attachShell(h4) { .zero }
            stack = s
        case .kernel:
            let kernel = KernelCounters(bearer: .fixed(ConnectionID(handle)))
            shell = .kernel(kernel)
            let s = PeripheralStack(core: core, below: KernelAdapter(adapterName: "hci0", configuration: configuration))
            s.attachShell(kernel) { .zero }
            stack = s
        }
        counters.stack = stack
        switch shell {
        case .h4(let h4):
            h4.runHost! { h4, now in h4.start(now: now) }
            var rounds = 0
            while stack.core.address == nil, !h4.unanswered.isEmpty, rounds < 200 {
                h4.answerOne()
                rounds += 1
            }
            guard stack.core.address != nil else { fatalError("benchmark setup: the scripted controller did not bring the host up") }
            // LE Connection Complete (Vol 4 Part E §7.7.65.1): handle, peripheral role, a random peer.
            h4.deliver(H4Packet(type: .event, body: [
                0x3E, 19, 0x01, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x01, 0x01,
                0x01, 0x02, 0x03, 0x04, 0x05, 0xC6, 24, 0, 0, 0, 72, 0, 0,
            ]))
        case .kernel(let kernel):
            var info = ControllerInfo()
            info.address = BluetoothAddress("C0:11:22:33:44:55")!
            kernel.runKernel! { rules, _ in rules.openForDriving(controller: info, description: "benchmark") }
            guard stack.core.address != nil else { fatalError("benchmark setup: the kernel's rules did not open") }
            let peer = KernelBDAddress(BluetoothAddress("C6:05:04:03:02:01")!, type: .leRandom)
            kernel.runKernel! { [handle] rules, now in rules.accepted(socket: Self.socket, handle: handle, peer: peer, security: .low, now: now) }
        }
        guard !stack.core.connections.isEmpty else { fatalError("benchmark setup: the central did not connect") }
        resetCounters()
    }

    public mutating func resetCounters() {
        counters.sentBytes = 0
        counters.sentPackets = 0
    }

    /// The central sends one ATT PDU (one ACL packet, or one read of its socket); everything it causes is run.
    public mutating func receive(att pdu: [UInt8]) {
        switch shell {
        case .h4(let h4):
            let length = pdu.count
            var body: [UInt8] = [UInt8(handle & 0xFF), UInt8(handle >> 8) | 0x20, UInt8((length + 4) & 0xFF), UInt8((length + 4) >> 8)]
            body += [UInt8(length & 0xFF), UInt8(length >> 8), 0x04, 0x00]
            body += pdu
            h4.deliver(H4Packet(type: .acl, body: body))
        case .kernel(let kernel):
            kernel.runKernel! { rules, _ in rules.received(pdu, fromSocket: Self.socket, security: .low) }
        }
    }

    /// The application pushes a value (as a control `notify` does after decoding).
    @discardableResult
    public mutating func notify(characteristic: CharacteristicIndex, value: [UInt8]) -> NotifyResult {
        let (result, outputs) = stack.core.notify(characteristic: characteristic, value: value, now: now)
        stack.perform(outputs, now: now)
        if case .h4(let h4) = shell { h4.complete() }
        return result
    }
}

/// What the shell sent (a class: the stack's shell counts into it).
class Counters {
    var sentBytes = 0
    var sentPackets = 0
    unowned(unsafe) var stack: (any PeripheralStackDriving)!
}

/// The H4 shell: counts packets, and answers as a scripted controller.
final class HostCounters: Counters, HostShell {
    var runHost: ((_ call: (inout H4Host, Duration) -> [HostOutput]) -> Void)?
    var controller: ScriptedController
    let handle: UInt16
    var unanswered: [[UInt8]] = []
    var aclInFlight = 0

    init(controller: ScriptedController, handle: UInt16) {
        self.controller = controller
        self.handle = handle
    }

    func perform(_ output: HostOutput) {
        switch output {
        case .send(let packet):
            sentPackets += 1
            sentBytes += 1 + packet.bodyCount
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

    func deliver(_ packet: H4Packet) {
        runHost! { h4, now in h4.receive(packet, now: now) }
        complete()
    }

    func answerOne() {
        let event = controller.answer(command: unanswered.removeFirst())
        runHost! { h4, now in h4.receive(H4Packet(type: .event, body: event), now: now) }
    }

    /// Answers the commands sent and reports the ACL packets sent as completed, as the
    /// controller does once they are on air, until the host sends nothing more.
    func complete() {
        while !unanswered.isEmpty || aclInFlight > 0 {
            while !unanswered.isEmpty { answerOne() }
            let n = aclInFlight
            guard n > 0 else { continue }
            aclInFlight = 0
            // Number Of Completed Packets: one handle, n packets.
            let event: [UInt8] = [0x13, 5, 1, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(n & 0xFF), UInt8(n >> 8)]
            runHost! { h4, now in h4.receive(H4Packet(type: .event, body: event), now: now) }
        }
    }
}

/// The kernel shell: counts the PDUs written; each is sent at once, so the bearer is ready again.
final class KernelCounters: Counters, KernelShell {
    var runKernel: ((_ call: (inout KernelAdapter, Duration) -> [KernelOutput]) -> Void)?
    let bearer: BearerID

    init(bearer: BearerID) { self.bearer = bearer }

    func perform(_ output: KernelOutput) {
        guard let (_, pdu) = output.written else { return }
        sentPackets += 1
        sentBytes += pdu.count
        stack.handle(.readyToSend(bearer), now: .zero)
    }
}
