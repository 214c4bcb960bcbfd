// gattd-kernel-smoke: proves the kernel transport inside the kernel-vm QEMU VM
// (scripts/kernel-vm-test). On hciN: bring it up, advertise, accept ATT connections on
// the kernel's L2CAP ATT channel and answer them with GattCore's ATTServer; advertise
// again after every connection and whenever the adapter comes back up.
//
//   gattd-kernel-smoke [-i hciN] [-n CONNECTIONS]   (exits 0 after CONNECTIONS closed; default: never)
import GattCore
import GattTransport
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

func say(_ line: String) {
    print(line)
    fflush(nil)
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined(separator: " ")
}

func parseArguments() -> (index: Int, connections: Int) {
    var index = 0
    var connections = 0
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "-i":
            let name = arguments.popFirst() ?? ""
            guard let parsed = Int(name.hasPrefix("hci") ? String(name.dropFirst(3)) : name) else {
                say("bad adapter \(name)")
                exit(2)
            }
            index = parsed
        case "-n":
            connections = Int(arguments.popFirst() ?? "") ?? 0
        default:
            say("usage: gattd-kernel-smoke [-i hciN] [-n CONNECTIONS]")
            exit(2)
        }
    }
    return (index, connections)
}
let (index, wantedConnections) = parseArguments()

let database = GATTDatabase(
    deviceName: "gattd-smoke", appearance: 0x0340,
    services: [
        ServiceDefinition(
            id: "smoke", uuid: BluetoothUUID(uuid16: 0xFFF0),
            characteristics: [
                CharacteristicDefinition(
                    id: "greeting", uuid: BluetoothUUID(uuid16: 0xFFF1), properties: [.read, .write],
                    value: Array("hello".utf8)),
                CharacteristicDefinition(
                    id: "counter", uuid: BluetoothUUID(uuid16: 0xFFF2), properties: [.read, .notify], value: [0x2A]),
                CharacteristicDefinition(
                    id: "secret", uuid: BluetoothUUID(uuid16: 0xFFF3), properties: [.read],
                    permissions: [.readable, .readEncryptionRequired], value: Array("secret".utf8)),
            ])
    ])

/// Service UUID 0xFFF0 and the name, built by GattCore's advertising payload builder.
func advertisingPayloads() throws -> AdvertisingPayloads {
    var configuration = AdvertisingConfiguration()
    configuration.localName = "gattd-smoke"
    configuration.serviceUUIDs = [BluetoothUUID(uuid16: 0xFFF0)]
    return try AdvertisingPayloadBuilder.build(configuration, deviceName: "gattd-smoke")
}

func advertise(_ controller: KernelHCIController) {
    do {
        let payloads = try advertisingPayloads()
        _ = try? controller.send(AdvertisingPayloads.disableCommand)
        for command in payloads.configurationCommands { try controller.send(command) }
        try controller.send(AdvertisingPayloads.enableCommand)
        say("advertising on \(controller.name): \(hex(payloads.advertisingData)) / \(hex(payloads.scanResponseData))")
    } catch {
        say("advertising failed: \(error)")
    }
}

/// GattCore's ATT server and the bearers it serves, touched only on the event loop.
struct Peripheral {
    var server: ATTServer
    var bearers: [ConnectionID: KernelATTBearer] = [:]
    var security: [ConnectionID: SecurityLevel] = [:]
    var nextID: UInt16 = 1
    let origin = ContinuousClock.now
    var now: Duration { origin.duration(to: .now) }

    /// Carries out the server's outputs: sends queued PDUs, logs events, closes bearers.
    mutating func perform(_ outputs: [ATTServerOutput]) {
        var pending = outputs
        while !pending.isEmpty {
            let output = pending.removeFirst()
            switch output {
            case .event(let event):
                say("event: \(event)")
            case .outgoingAvailable(let id):
                while let (pdu, more) = server.dequeueOutgoing(for: id) {
                    say("> \(hex(pdu))")
                    do { try bearers[id]?.send(pdu) } catch { say("send failed: \(error)") }
                    // Insufficient Authentication/Encryption: ask the kernel to raise the link's
                    // security; it sends an SMP Security Request and the central pairs.
                    if pdu.count == 5, pdu[0] == 0x01, pdu[4] == 0x05 || pdu[4] == 0x0F {
                        do {
                            try bearers[id]?.requestSecurity(.medium)
                            say("requested security medium on \(id)")
                        } catch { say("requestSecurity failed: \(error)") }
                    }
                    pending += more
                }
            case .closeBearer(let id, let reason):
                say("closing \(id): \(reason)")
                bearers.removeValue(forKey: id)?.close()
                pending += server.disconnect(id)
            }
        }
    }
}

do {
    if let warning = BluetoothdDetector.warning(adapter: "hci\(index)") { say("warning: \(warning)") }
    let before = try KernelHCIController.info(index: index)
    say("hci\(index) \(before.address) \(before.isUp ? "UP" : "DOWN") before start")
    let controller = try KernelHCIController(index: index)
    say("opened \(controller.name) address \(controller.address) LE features 0x\(String(controller.leFeatures, radix: 16))")
    let poller = try KernelPoller()
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let monitor = try KernelAdapterMonitor(index: index, poller: poller)
    monitor.start(on: loop) { event in
        say("adapter event: \(event)")
        if case .up = event { advertise(controller) }
    }

    let listener = try KernelATTListener(
        address: KernelBDAddress(controller.address.address, type: .lePublic), adapter: controller.name, poller: poller)
    let peripheral = Mutex(Peripheral(server: ATTServer(database: database)))
    let closedConnections = Mutex(0)
    let done = loop.makePromise(of: Void.self)
    listener.start(on: loop) { bearer in
        let security = (try? bearer.securityLevel())?.level ?? .low
        let id = peripheral.withLock { state in
            let id = ConnectionID(state.nextID)
            state.nextID &+= 1
            state.bearers[id] = bearer
            state.server.connect(id, security: security)
            state.security[id] = security
            return id
        }
        say("accepted \(bearer.peer) security \(security) imtu \(bearer.incomingMTU) as \(id)")
        bearer.start(
            on: loop,
            onPDU: { pdu in
                say("< \(hex(pdu))")
                // The kernel's SMP may have encrypted the link since the last PDU (the central
                // pairs after Insufficient Encryption): tell the server before it checks permissions.
                let level = (try? bearer.securityLevel())?.level
                peripheral.withLock { state in
                    if let level, level != state.security[id] {
                        say("security of \(id) is now \(level)")
                        state.security[id] = level
                        state.server.setSecurity(id, level)
                    }
                    state.perform(state.server.receive(pdu, from: id, now: state.now))
                }
            },
            onClose: { reason in
                say("closed \(bearer.peer): \(reason)")
                bearer.close()
                peripheral.withLock { state in
                    state.bearers[id] = nil
                    state.security[id] = nil
                    state.perform(state.server.disconnect(id))
                }
                advertise(controller)
                let count = closedConnections.withLock { count in
                    count += 1
                    return count
                }
                if wantedConnections > 0 && count >= wantedConnections { done.succeed(()) }
            })
    }
    advertise(controller)
    say("READY \(controller.name) \(controller.address.address)")
    try done.futureResult.wait()
    listener.close()
    monitor.close()
    poller.shutdown()
    say("served \(wantedConnections) connection(s)")
    exit(0)
} catch {
    say("FATAL: \(error)")
    exit(1)
}
